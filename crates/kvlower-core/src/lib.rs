//! The ResidentClaim lowering model and its fail-closed judgment.

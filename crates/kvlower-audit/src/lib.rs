//! Audit suites that keep the checker honest.

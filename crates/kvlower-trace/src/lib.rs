//! Streams runtime event traces (JSON Lines) and decides claim-scoped gate verdicts.

//! Telemetry-join adapter: reconstructs claim materialization from runtime KV event streams.

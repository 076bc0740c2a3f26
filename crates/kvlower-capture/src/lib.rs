//! Raw captures of runtime KV-event streams.
//!
//! vLLM, SGLang and TensorRT-LLM (streaming) publish KV-cache events over ZMQ PUB
//! sockets as multipart messages `[topic, 8-byte big-endian sequence, msgpack payload]`,
//! one publisher per data-parallel rank. A join is only re-runnable if those bytes are
//! kept exactly as sent, so this crate has two parts:
//!
//! - [`file`]: the versioned capture file (`docs/capture-format.md`): writer and a
//!   bounded reader. No networking; `kvlower-join` reads captures through it.
//! - [`subscribe`] (feature `zmq`): the subscriber behind `kvlower capture`, on
//!   [`zmtp`], a bounded ZMTP 3 SUB client (every declared size is checked against a
//!   cap before it is read).

pub mod file;
#[cfg(feature = "zmq")]
pub mod subscribe;
#[cfg(feature = "zmq")]
pub mod zmtp;

pub use file::{
    CaptureError, CaptureHeader, CaptureReader, CaptureWriter, Endpoint, EventFrame, MAGIC,
    MAX_FRAME_BYTES, Record, event_frame,
};

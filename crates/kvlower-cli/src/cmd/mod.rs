//! One module per subcommand; each owns its clap arguments and its `run`.

pub mod check;
pub mod gate;
pub mod join;
pub mod matrix;

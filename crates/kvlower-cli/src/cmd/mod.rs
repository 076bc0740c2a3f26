//! One module per subcommand; each owns its clap arguments and its `run`.

pub mod bad_lowering;
pub mod capture;
pub mod catalog;
pub mod check;
pub mod codes;
pub mod completions;
pub mod explain;
pub mod gate;
pub mod init;
pub mod join;
pub mod matrix;
pub mod new;
pub mod reproduce;
pub mod route;
pub mod schema;

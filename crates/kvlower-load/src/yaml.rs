//! The only module in kvlower that calls a YAML library.
//!
//! serde_yaml is archived upstream; every YAML call goes through here so that
//! swapping it (e.g. for `serde-saphyr` or `yaml_serde`) is a one-file change.

use serde::de::DeserializeOwned;

/// A YAML document that could not be read into the expected type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct YamlError {
    /// Dotted YAML path to the offending node (`rows[3].anchor`), empty at the top.
    pub path: String,
    /// 1-based line and column, when the parser knows them.
    pub location: Option<(usize, usize)>,
    /// What went wrong, without the location (that is in `location`).
    pub message: String,
}

/// Deserializes `src` into `T`, recording the YAML path of any error.
pub fn from_str<T: DeserializeOwned>(src: &str) -> Result<T, YamlError> {
    let de = serde_yaml::Deserializer::from_str(src);
    serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let location = inner.location().map(|l| (l.line(), l.column()));
        let mut message = inner.to_string();
        // serde_yaml appends " at line L column C"; we carry that separately.
        if let Some(cut) = message.find(" at line ") {
            message.truncate(cut);
        }
        // serde_yaml also prefixes the path ("runtime: duplicate field"); we carry it separately.
        if let Some((head, rest)) = message.split_once(": ")
            && !head.is_empty()
            && !head.contains(char::is_whitespace)
        {
            message = rest.to_string();
        }
        YamlError {
            path: if path == "." { String::new() } else { path },
            location,
            message,
        }
    })
}

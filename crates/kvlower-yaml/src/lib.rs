//! The only crate in kvlower that calls a YAML library.
//!
//! serde_yaml is archived upstream; every YAML call goes through here so that
//! swapping it (e.g. for `serde-saphyr` or `yaml_serde`) is a one-file change. It is its own crate so that every other crate
//! (the loader, the join adapter) can share it without depending on each other.

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

#[cfg(test)]
mod tests {
    use super::*;

    /// A billion-laughs document expands to 9^9 nodes if aliases are replayed
    /// naively; the parser must refuse it quickly, even into an untyped value.
    #[test]
    fn alias_bombs_are_refused() {
        let mut doc = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for i in 0..8u8 {
            let (this, prev) = ((b'b' + i) as char, (b'a' + i) as char);
            let refs = vec![format!("*{prev}"); 9].join(",");
            doc.push_str(&format!("{this}: &{this} [{refs}]\n"));
        }
        let err = from_str::<serde_json::Value>(&doc).expect_err("the bomb is refused");
        assert!(err.message.contains("repetition limit"), "{}", err.message);
    }

    #[test]
    fn deep_nesting_is_refused() {
        let doc = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let err = from_str::<serde_json::Value>(&doc).expect_err("refused");
        assert!(err.message.contains("recursion limit"), "{}", err.message);
    }

    #[test]
    fn errors_carry_path_and_location() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Doc {
            items: Vec<Item>,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Item {
            n: u32,
        }
        let err = from_str::<Doc>("items:\n  - n: 1\n  - n: x\n").expect_err("wrong type");
        assert_eq!(err.path, "items[1].n");
        assert_eq!(err.location, Some((3, 8)));
        assert!(
            !err.message.contains("items"),
            "path prefix stripped: {}",
            err.message
        );
    }
}

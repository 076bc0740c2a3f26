//! What counts as "written" in a descriptor field.
//!
//! Why: `str::trim` keeps zero-width and other invisible characters, so a
//! `note` of U+200B alone looked written and anchored evidence. A field is
//! blank unless it has a character a reader can see.

/// Invisible characters that `char::is_whitespace` does not cover: format
/// characters (zero-width space/joiners, word joiner, BOM, soft hyphen, …),
/// fillers that render as nothing, variation selectors and tag characters.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{2800}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}'
        | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}' | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0000}'..='\u{E0FFF}')
}

/// True when `s` has at least one visible character.
pub fn has_visible(s: &str) -> bool {
    s.chars()
        .any(|c| !c.is_whitespace() && !c.is_control() && !is_invisible(c))
}

/// True when `s` holds a control character (newlines and tabs included): not
/// allowed in names, versions, paths, commits, URLs or dates.
pub fn has_control(s: &str) -> bool {
    s.chars()
        .any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_only_is_blank() {
        for s in [
            "",
            " ",
            "\u{200B}",
            "\u{FEFF}",
            "\u{2060}",
            "\u{00A0}",
            "\u{200B}\u{00A0} \t",
            "\u{3164}",
        ] {
            assert!(!has_visible(s), "{s:?} should be blank");
        }
        assert!(has_visible("\u{200B}a"));
        assert!(has_visible("§4"));
    }

    #[test]
    fn control_characters_are_found() {
        assert!(has_control("a\nb"));
        assert!(has_control("a\u{1b}[31m"));
        assert!(!has_control("owner/name"));
    }
}

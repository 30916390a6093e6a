//! The word lists of simple intents (greeting, thanks, cancel words, …): `locales/lexicons.txt`,
//! embedded at build time, extended by an operator's `<texts_dir>/lexicons.txt` (loaded with the
//! config, so an edit hot-reloads). Plain word lists here; the registry compiles them into
//! matchers ([`crate::text`] is the lowest layer and matches nothing itself).
//!
//! Format: one list per line, `name: word, word, …`; a list may span several lines (they add
//! up); blank lines and lines starting with `#` are ignored. Names are those of [`Lexicon`].

use std::path::Path;
use std::sync::LazyLock;

use super::TextError;

/// One word list of the lexicon file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lexicon {
    /// Thoughts of self-harm (`self_harm`): a safety message and an urgent hand-over.
    SelfHarm,
    /// Dangerous or sensitive content (`sensitive`).
    Sensitive,
    /// Insults and abuse (`abuse`).
    Abuse,
    /// A request for a human (`human`).
    Human,
    /// "What can you do?" (`capabilities`).
    Capabilities,
    /// Asking for help and nothing else (`help`): "help", "帮助", "menu". Matched only as the whole
    /// message (punctuation and spaces around it aside), since "help me book a hotel" asks for a
    /// card; answered like `capabilities`.
    Help,
    /// Small talk (`chit_chat`).
    ChitChat,
    /// 你好 / hello (`greeting`).
    Greeting,
    /// 谢谢 / thanks (`thanks`).
    Thanks,
    /// Frustration and anger without abuse (`anger`): an apology and a human offered.
    Anger,
    /// Cancel words: drop the pending clarification (`cancel`).
    Cancel,
    /// Short yes-answers (`affirm`): accept the one option offered, confirm remembered values.
    Affirm,
    /// Short no-answers (`deny`): decline a confirmation (the confirmed sub-task is dropped).
    Deny,
}

impl Lexicon {
    /// Every list, in the order the rule planner checks the simple intents (cancel last).
    pub const ALL: [Lexicon; 13] = [
        Lexicon::SelfHarm,
        Lexicon::Sensitive,
        Lexicon::Abuse,
        Lexicon::Human,
        Lexicon::Anger,
        Lexicon::Capabilities,
        Lexicon::Help,
        Lexicon::ChitChat,
        Lexicon::Greeting,
        Lexicon::Thanks,
        Lexicon::Cancel,
        Lexicon::Affirm,
        Lexicon::Deny,
    ];

    /// Its name in the lexicon file.
    pub fn name(self) -> &'static str {
        match self {
            Self::SelfHarm => "self_harm",
            Self::Sensitive => "sensitive",
            Self::Abuse => "abuse",
            Self::Anger => "anger",
            Self::Human => "human",
            Self::Capabilities => "capabilities",
            Self::Help => "help",
            Self::ChitChat => "chit_chat",
            Self::Greeting => "greeting",
            Self::Thanks => "thanks",
            Self::Cancel => "cancel",
            Self::Affirm => "affirm",
            Self::Deny => "deny",
        }
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|l| *l == self).unwrap_or_default()
    }
}

/// The shipped lexicon file.
const SHIPPED_SOURCE: &str = include_str!("../../locales/lexicons.txt");

/// The shipped lexicons, parsed once (a unit test rules out errors; any are logged).
static SHIPPED: LazyLock<Lexicons> = LazyLock::new(|| {
    let mut lexicons = Lexicons::default();
    if let Err(errors) = lexicons.add(Path::new("locales/lexicons.txt"), SHIPPED_SOURCE) {
        tracing::error!(?errors, "the shipped lexicon file does not parse");
    }
    lexicons
});

/// The words of every [`Lexicon`], lower-cased, without duplicates, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lexicons {
    words: [Vec<String>; Lexicon::ALL.len()],
}

impl Lexicons {
    /// The shipped lists (`locales/lexicons.txt`).
    pub fn shipped() -> &'static Lexicons {
        &SHIPPED
    }

    /// The words of `lexicon`.
    pub fn words(&self, lexicon: Lexicon) -> &[String] {
        &self.words[lexicon.index()]
    }

    /// Adds the words of the lexicon file `source` (read from `path`, for errors). Nothing is
    /// added when it has errors.
    ///
    /// # Errors
    /// Every line that is not `name: words` with a known name, with its file and line.
    pub fn add(&mut self, path: &Path, source: &str) -> Result<(), Vec<TextError>> {
        let mut errors = Vec::new();
        let mut added = self.clone();
        for (n, line) in source.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at =
                |message: String| TextError { file: path.to_path_buf(), line: Some(n + 1), column: Some(1), message };
            let Some((name, words)) = line.split_once(':') else {
                errors.push(at("expected `name: word, word, …`".to_string()));
                continue;
            };
            let Some(lexicon) = Lexicon::ALL.into_iter().find(|l| l.name() == name.trim()) else {
                let names: Vec<&str> = Lexicon::ALL.iter().map(|l| l.name()).collect();
                errors.push(at(format!("unknown list {:?} (the lists: {})", name.trim(), names.join(", "))));
                continue;
            };
            let list = &mut added.words[lexicon.index()];
            for word in words.split([',', '，']).map(|w| w.trim().to_lowercase()).filter(|w| !w.is_empty()) {
                if !list.contains(&word) {
                    list.push(word);
                }
            }
        }
        if errors.is_empty() {
            *self = added;
            Ok(())
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_file_parses_and_fills_every_list() {
        let mut lexicons = Lexicons::default();
        lexicons.add(Path::new("lexicons.txt"), SHIPPED_SOURCE).unwrap();
        for lexicon in Lexicon::ALL {
            assert!(!lexicons.words(lexicon).is_empty(), "{} is empty", lexicon.name());
        }
        // The cancel words of the contract's scenarios.
        for word in ["取消", "算了", "退出", "quit", "exit", "cancel"] {
            assert!(Lexicons::shipped().words(Lexicon::Cancel).iter().any(|w| w == word), "{word}");
        }
    }

    #[test]
    fn an_operator_file_adds_words_or_is_rejected_whole() {
        let mut lexicons = Lexicons::shipped().clone();
        lexicons.add(Path::new("x/lexicons.txt"), "# mine\ncancel: 撤销， Abort\n\ngreeting: 早\n").unwrap();
        assert!(lexicons.words(Lexicon::Cancel).ends_with(&["撤销".to_string(), "abort".to_string()]));
        assert!(lexicons.words(Lexicon::Greeting).contains(&"早".to_string()));
        assert!(lexicons.words(Lexicon::Cancel).contains(&"取消".to_string()), "the shipped words stay");

        let before = lexicons.clone();
        let errors =
            lexicons.add(Path::new("x/lexicons.txt"), "cancel: 撤回\ngoodbye: 再见\njust words\n").unwrap_err();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert_eq!((errors[0].line, errors[1].line), (Some(2), Some(3)));
        assert!(errors[0].message.contains("goodbye"), "{}", errors[0].message);
        assert_eq!(lexicons, before, "nothing of a rejected file is added");
    }
}

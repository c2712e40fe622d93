//! getopt-style splitting of a command's arguments into options and operands,
//! enough to find which words are paths.

use super::words::Word;

#[derive(Debug)]
pub(crate) struct ParsedOption<'w> {
    /// `-x` for short options, `--name` for long ones.
    pub name: String,
    pub value: Option<OptionValue<'w>>,
}

#[derive(Debug, Clone)]
pub(crate) enum OptionValue<'w> {
    /// The value is a whole separate word.
    Word(&'w Word),
    /// The value is glued to the option (`-n5`, `--lines=5`).
    Attached(String),
}

impl OptionValue<'_> {
    /// The value as a word, for path resolution.
    pub(crate) fn to_word(&self) -> Word {
        match self {
            OptionValue::Word(word) => (*word).clone(),
            OptionValue::Attached(text) => Word::known(text, true),
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Parsed<'w> {
    pub options: Vec<ParsedOption<'w>>,
    pub operands: Vec<&'w Word>,
}

impl<'w> Parsed<'w> {
    pub(crate) fn has(&self, names: &[&str]) -> bool {
        self.options
            .iter()
            .any(|option| names.contains(&option.name.as_str()))
    }

    pub(crate) fn values(&self, names: &[&str]) -> Vec<Word> {
        self.options
            .iter()
            .filter(|option| names.contains(&option.name.as_str()))
            .filter_map(|option| option.value.as_ref().map(OptionValue::to_word))
            .collect()
    }
}

/// Splits `args` GNU-style: options may come anywhere until `--`; `takes_value`
/// lists the options (short `-x` or long `--name`) whose value may be the
/// next word. A word whose value is unknown is an operand: it cannot be told
/// apart, and operands are what the rules check.
pub(crate) fn parse<'w>(args: &'w [Word], takes_value: &[&str]) -> Parsed<'w> {
    let mut parsed = Parsed::default();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let Some(text) = word.value() else {
            parsed.operands.push(word);
            continue;
        };
        if text == "--" {
            parsed.operands.extend(words.by_ref());
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, value)) => (
                    format!("--{name}"),
                    Some(OptionValue::Attached(value.to_owned())),
                ),
                None => (format!("--{long}"), None),
            };
            let value = match attached {
                Some(value) => Some(value),
                None if takes_value.contains(&name.as_str()) => words.next().map(OptionValue::Word),
                None => None,
            };
            parsed.options.push(ParsedOption { name, value });
            continue;
        }
        let Some(cluster) = text.strip_prefix('-').filter(|rest| !rest.is_empty()) else {
            parsed.operands.push(word);
            continue;
        };
        for (index, flag) in cluster.char_indices() {
            let name = format!("-{flag}");
            if takes_value.contains(&name.as_str()) {
                let rest = &cluster[index + flag.len_utf8()..];
                let value = if rest.is_empty() {
                    words.next().map(OptionValue::Word)
                } else {
                    Some(OptionValue::Attached(rest.to_owned()))
                };
                parsed.options.push(ParsedOption { name, value });
                break;
            }
            parsed.options.push(ParsedOption { name, value: None });
        }
    }
    parsed
}

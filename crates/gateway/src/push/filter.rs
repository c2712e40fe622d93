//! EventFilters (`filter.set`): first-match-wins regex rules that override
//! a push's level on one stream.

use bridge_engine::compile_regex;
use bridge_protocol::provider::{FilterOutcome, FilterRule, PushLevel};
use regex::Regex;

/// What a push becomes after its stream's filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Inject,
    Surface,
    Keep,
}

impl Level {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Inject => "inject",
            Self::Surface => "surface",
            Self::Keep => "keep",
        }
    }
}

impl From<PushLevel> for Level {
    fn from(level: PushLevel) -> Self {
        match level {
            PushLevel::Inject => Self::Inject,
            PushLevel::Surface => Self::Surface,
            PushLevel::Keep => Self::Keep,
        }
    }
}

/// A compiled filter.
#[derive(Debug, Clone)]
pub(crate) struct Filter {
    rules: Vec<(Regex, FilterOutcome)>,
}

impl Filter {
    /// Compiles every rule; the error names the first bad one.
    pub(crate) fn compile(rules: &[FilterRule]) -> Result<Self, String> {
        let compiled = rules
            .iter()
            .enumerate()
            .map(|(index, rule)| {
                compile_regex(&rule.pattern)
                    .map(|regex| (regex, rule.outcome))
                    .map_err(|err| format!("rules[{index}].match: {err}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { rules: compiled })
    }

    /// The first matching rule's outcome: `None` keeps the push's own
    /// level; `Some(None)` drops the push.
    pub(crate) fn outcome(&self, text: &str) -> Option<Option<Level>> {
        self.rules
            .iter()
            .find(|(regex, _)| regex.is_match(text))
            .map(|(_, outcome)| match outcome {
                FilterOutcome::Drop => None,
                FilterOutcome::Inject => Some(Level::Inject),
                FilterOutcome::Surface => Some(Level::Surface),
                FilterOutcome::Keep => Some(Level::Keep),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(pattern: &str, outcome: FilterOutcome) -> FilterRule {
        FilterRule {
            pattern: pattern.to_owned(),
            outcome,
        }
    }

    #[test]
    fn the_first_matching_rule_wins() {
        let filter = Filter::compile(&[
            rule("behind=0", FilterOutcome::Drop),
            rule("conflicts=[1-9]", FilterOutcome::Inject),
            rule(".*", FilterOutcome::Keep),
        ])
        .unwrap();
        assert_eq!(filter.outcome("behind=0 conflicts=3"), Some(None));
        assert_eq!(filter.outcome("conflicts=3"), Some(Some(Level::Inject)));
        assert_eq!(filter.outcome("anything"), Some(Some(Level::Keep)));
    }

    #[test]
    fn no_match_keeps_the_push_level() {
        let filter = Filter::compile(&[rule("^x$", FilterOutcome::Surface)]).unwrap();
        assert_eq!(filter.outcome("y"), None);
    }

    #[test]
    fn a_bad_pattern_names_its_rule() {
        let err = Filter::compile(&[
            rule("ok", FilterOutcome::Keep),
            rule("(unclosed", FilterOutcome::Keep),
        ])
        .unwrap_err();
        assert!(err.starts_with("rules[1].match"), "{err}");
    }
}

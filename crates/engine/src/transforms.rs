//! Prompt-section transforms: static append / prepend / replace, and
//! callbacks answered by a provider at prompt time.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

/// Sections no transform may replace or prepend to; they are rendered last,
/// so safety content always has the last word.
pub const PROTECTED_SECTIONS: [&str; 2] = ["safety", "identity"];

/// One owner's transform of one section.
#[derive(Clone)]
pub enum Transform {
    Append(String),
    Prepend(String),
    Replace(String),
    Callback(Arc<dyn TransformHandler>),
}

impl std::fmt::Debug for Transform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Append(text) => f.debug_tuple("Append").field(text).finish(),
            Self::Prepend(text) => f.debug_tuple("Prepend").field(text).finish(),
            Self::Replace(text) => f.debug_tuple("Replace").field(text).finish(),
            Self::Callback(_) => f.write_str("Callback"),
        }
    }
}

/// Answers a callback transform; `None` keeps the current text.
#[async_trait]
pub trait TransformHandler: Send + Sync {
    async fn transform(
        &self,
        session_id: Arc<str>,
        section: String,
        current: String,
    ) -> Option<String>;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransformError {
    #[error("section '{0}' is protected: only append is allowed")]
    Protected(String),
}

/// Transforms of a session, in registration order.
#[derive(Debug, Default)]
pub(crate) struct TransformTable {
    /// (section, owner, transform); order is first registration of
    /// (owner, section).
    entries: Vec<(String, String, Transform)>,
}

impl TransformTable {
    pub(crate) fn set(
        &mut self,
        owner: &str,
        section: &str,
        transform: Option<Transform>,
    ) -> Result<(), TransformError> {
        if let Some(t) = &transform
            && is_protected(section)
            && !matches!(t, Transform::Append(_))
        {
            return Err(TransformError::Protected(section.to_owned()));
        }
        let position = self
            .entries
            .iter()
            .position(|(s, o, _)| s == section && o == owner);
        match (position, transform) {
            (Some(i), Some(t)) => self.entries[i].2 = t,
            (Some(i), None) => {
                self.entries.remove(i);
            }
            (None, Some(t)) => self.entries.push((section.to_owned(), owner.to_owned(), t)),
            (None, None) => {}
        }
        Ok(())
    }

    pub(crate) fn remove_owner(&mut self, owner: &str) {
        self.entries.retain(|(_, o, _)| o != owner);
    }

    pub(crate) fn for_section(&self, section: &str) -> Vec<(String, Transform)> {
        self.entries
            .iter()
            .filter(|(s, _, _)| s == section)
            .map(|(_, o, t)| (o.clone(), t.clone()))
            .collect()
    }

    pub(crate) fn sections(&self) -> Vec<String> {
        let mut sections: Vec<String> = Vec::new();
        for (section, _, _) in &self.entries {
            if !sections.contains(section) {
                sections.push(section.clone());
            }
        }
        sections
    }
}

pub fn is_protected(section: &str) -> bool {
    PROTECTED_SECTIONS.contains(&section)
}

/// Applies `transforms` to `base` in order. A callback that does not answer
/// within `timeout` leaves the text as it was.
pub(crate) async fn apply(
    session_id: &Arc<str>,
    section: &str,
    base: String,
    transforms: Vec<(String, Transform)>,
    timeout: Duration,
) -> String {
    let mut text = base;
    for (owner, transform) in transforms {
        text = match transform {
            Transform::Append(content) => join(&text, &content),
            Transform::Prepend(content) => join(&content, &text),
            Transform::Replace(content) => content,
            Transform::Callback(handler) => {
                let call = handler.transform(session_id.clone(), section.to_owned(), text.clone());
                match tokio::time::timeout(timeout, call).await {
                    Ok(Some(content)) => content,
                    Ok(None) => text,
                    Err(_) => {
                        tracing::warn!(%owner, %section, "transform callback timed out; keeping the current text");
                        text
                    }
                }
            }
        };
    }
    text
}

fn join(first: &str, second: &str) -> String {
    match (first.is_empty(), second.is_empty()) {
        (true, _) => second.to_owned(),
        (_, true) => first.to_owned(),
        _ => format!("{first}\n{second}"),
    }
}

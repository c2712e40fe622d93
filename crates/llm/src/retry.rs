//! Retries of failed requests around any [`ChatBackend`].
//!
//! Failures are classified with the policy crate's error classification
//! (`bridge_util::recovery`): rate limits and transient failures (408, 5xx,
//! timeouts, unreachable upstream) are retried within the budgets of an
//! [`ErrorPolicy`]; everything else (authorization, configuration, other
//! 4xx, malformed answers) is returned at once.
//!
//! A streamed answer is only retried while nothing of it has reached the
//! caller: an error that arrives before the first event counts as a failure
//! of the request, an error after it is passed through, since the caller
//! may already have shown or acted on the partial answer.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bridge_util::recovery::{Backoff, ErrorClass, ErrorPolicy, RecoveryAction, classify};
use futures::StreamExt;

use crate::{ChatBackend, ChatRequest, ChatResponse, ChatStream, LlmError};

/// How long to wait between attempts, and how many to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryConfig {
    /// The ceiling of the first backoff; it doubles with each retry.
    pub base_delay: Duration,
    /// The largest backoff ceiling, however many retries were made.
    pub max_delay: Duration,
    /// The longest `Retry-After` we honour: an upstream asking for more is
    /// not going to answer soon enough to keep a user waiting, so its error
    /// is returned instead.
    pub max_retry_after: Duration,
    /// Retry budgets: `max_retries` for rate limits, `transient_retries`
    /// for transient failures.
    pub policy: ErrorPolicy,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            policy: ErrorPolicy::default(),
        }
    }
}

impl RetryConfig {
    /// The wait before retry number `retry` (0 for the first retry) after
    /// `error`, or `None` when the error must be returned instead.
    pub fn next_delay(&self, error: &LlmError, retry: u32) -> Option<Duration> {
        let class = error_class(error);
        if self.policy.decide(class, retry) != RecoveryAction::Retry {
            return None;
        }
        match retry_after_of(error) {
            Some(asked) if asked > self.max_retry_after => None,
            Some(asked) => Some(asked),
            None => Some(self.backoff(retry)),
        }
    }

    /// Exponential backoff with full jitter (see [`Backoff::jittered`]).
    fn backoff(&self, retry: u32) -> Duration {
        Backoff::new(self.base_delay, self.max_delay).jittered(retry)
    }
}

/// The class of a backend failure for the retry decision.
pub fn error_class(error: &LlmError) -> ErrorClass {
    match error {
        LlmError::Http {
            status, message, ..
        } => match status {
            // Only the status decides for a client error: an upstream's
            // message must not turn a bad request into a retry loop.
            400..=499 => classify(Some(*status), ""),
            // 501 and 505 say the server will never do this; every other
            // server error may pass.
            501 | 505 => ErrorClass::Other,
            500..=599 => match classify(Some(*status), message) {
                ErrorClass::Other | ErrorClass::NotFound => ErrorClass::Transient,
                class => class,
            },
            _ => classify(Some(*status), message),
        },
        LlmError::Timeout { .. } | LlmError::Transport { .. } => ErrorClass::Transient,
        // A cut or garbled answer may be a proxy's hiccup ("connection
        // reset"); the message tells.
        LlmError::Protocol { message, .. } => classify(None, message),
        LlmError::Auth { .. } | LlmError::NotConfigured(_) => ErrorClass::Other,
    }
}

fn retry_after_of(error: &LlmError) -> Option<Duration> {
    match error {
        LlmError::Http { retry_after, .. } => *retry_after,
        _ => None,
    }
}

/// A [`ChatBackend`] that retries the failed requests of another one.
///
/// Retrying happens inside the futures of [`ChatBackend::stream`] and
/// [`ChatBackend::models`]: dropping them stops it, no task lives on.
#[derive(Debug)]
pub struct RetryingBackend<B: ChatBackend + ?Sized> {
    inner: Arc<B>,
    config: RetryConfig,
}

impl<B: ChatBackend> RetryingBackend<B> {
    pub fn new(inner: B, config: RetryConfig) -> Self {
        Self::from_arc(Arc::new(inner), config)
    }
}

impl<B: ChatBackend + ?Sized> RetryingBackend<B> {
    /// Wraps a shared backend, e.g. an `Arc<dyn ChatBackend>`.
    pub fn from_arc(inner: Arc<B>, config: RetryConfig) -> Self {
        Self { inner, config }
    }

    pub fn config(&self) -> &RetryConfig {
        &self.config
    }

    pub fn inner(&self) -> &Arc<B> {
        &self.inner
    }

    /// The wait before the next attempt, logged; `None` to give up.
    fn plan_retry(&self, error: &LlmError, retry: u32, operation: &str) -> Option<Duration> {
        let delay = self.config.next_delay(error, retry)?;
        // Upstream messages may quote the request, keys included.
        let error_text = error.to_string();
        tracing::warn!(
            backend = %self.inner.name(),
            operation,
            retry = retry + 1,
            class = ?error_class(error),
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error = %bridge_policy::redact(&error_text),
            "retrying a failed upstream request"
        );
        Some(delay)
    }
}

/// How one attempt at a streamed answer ended.
enum Attempt {
    /// The first event (or the end) arrived: the stream goes to the caller.
    Started(ChatStream),
    /// `stream()` itself failed.
    Refused(LlmError),
    /// The stream opened, but its first item was an error.
    FailedFirst(LlmError),
}

/// Waits for the first item, so that an error before any event can still
/// be retried; the item is put back in front of the rest.
async fn first_item(backend: &(impl ChatBackend + ?Sized), request: &ChatRequest) -> Attempt {
    let mut stream = match backend.stream(request).await {
        Ok(stream) => stream,
        Err(error) => return Attempt::Refused(error),
    };
    match stream.next().await {
        Some(Err(error)) => Attempt::FailedFirst(error),
        Some(Ok(event)) => Attempt::Started(
            futures::stream::once(async { Ok(event) })
                .chain(stream)
                .boxed(),
        ),
        None => Attempt::Started(futures::stream::empty().boxed()),
    }
}

#[async_trait]
impl<B: ChatBackend + ?Sized> ChatBackend for RetryingBackend<B> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, LlmError> {
        let mut retry = 0;
        loop {
            let (error, in_stream) = match first_item(&*self.inner, request).await {
                Attempt::Started(stream) => return Ok(stream),
                Attempt::Refused(error) => (error, false),
                Attempt::FailedFirst(error) => (error, true),
            };
            let Some(delay) = self.plan_retry(&error, retry, "chat") else {
                // Given up: the error reaches the caller where it would have
                // without retries.
                return if in_stream {
                    Ok(futures::stream::once(async { Err(error) }).boxed())
                } else {
                    Err(error)
                };
            };
            tokio::time::sleep(delay).await;
            retry += 1;
        }
    }

    /// Nothing of a whole answer reached the caller before it failed, so
    /// any retryable failure is retried, not only one before the first event.
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut retry = 0;
        loop {
            let error = match self.inner.complete(request).await {
                Ok(answer) => return Ok(answer),
                Err(error) => error,
            };
            let Some(delay) = self.plan_retry(&error, retry, "chat") else {
                return Err(error);
            };
            tokio::time::sleep(delay).await;
            retry += 1;
        }
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        let mut retry = 0;
        loop {
            let error = match self.inner.models().await {
                Ok(models) => return Ok(models),
                Err(error) => error,
            };
            let Some(delay) = self.plan_retry(&error, retry, "models") else {
                return Err(error);
            };
            tokio::time::sleep(delay).await;
            retry += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use super::*;
    use crate::{ChatEvent, FinishReason};

    fn http(status: u16, message: &str, retry_after: Option<Duration>) -> LlmError {
        LlmError::Http {
            backend: "fake".into(),
            status,
            message: message.into(),
            retry_after,
        }
    }

    fn timeout() -> LlmError {
        LlmError::Timeout {
            backend: "fake".into(),
            after: Duration::from_secs(1),
        }
    }

    fn fast() -> RetryConfig {
        RetryConfig {
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(20),
            max_retry_after: Duration::from_secs(2),
            policy: ErrorPolicy {
                max_retries: 3,
                transient_retries: 2,
            },
        }
    }

    /// What one call of the fake's `stream()` answers.
    enum Scripted {
        Refuse(LlmError),
        Items(Vec<Result<ChatEvent, LlmError>>),
    }

    struct Fake {
        script: Mutex<VecDeque<Scripted>>,
        calls: Mutex<u32>,
    }

    impl Fake {
        fn new(script: Vec<Scripted>) -> Self {
            Self {
                script: Mutex::new(script.into()),
                calls: Mutex::new(0),
            }
        }
    }

    #[async_trait]
    impl ChatBackend for Fake {
        fn name(&self) -> &str {
            "fake"
        }

        async fn stream(&self, _request: &ChatRequest) -> Result<ChatStream, LlmError> {
            *self.calls.lock().unwrap() += 1;
            match self.script.lock().unwrap().pop_front() {
                Some(Scripted::Refuse(error)) => Err(error),
                Some(Scripted::Items(items)) => Ok(futures::stream::iter(items).boxed()),
                None => panic!("the fake backend was called more often than scripted"),
            }
        }

        async fn models(&self) -> Result<Vec<String>, LlmError> {
            *self.calls.lock().unwrap() += 1;
            match self.script.lock().unwrap().pop_front() {
                Some(Scripted::Refuse(error)) => Err(error),
                _ => Ok(vec!["m".into()]),
            }
        }
    }

    fn text(text: &str) -> Result<ChatEvent, LlmError> {
        Ok(ChatEvent::TextDelta { text: text.into() })
    }

    #[test]
    fn classes_follow_status_then_kind() {
        assert_eq!(error_class(&http(429, "", None)), ErrorClass::RateLimit);
        for status in [408, 500, 502, 503, 504, 507, 529] {
            assert_eq!(
                error_class(&http(status, "boom", None)),
                ErrorClass::Transient,
                "{status}"
            );
        }
        assert_eq!(
            error_class(&http(400, "rate limit exceeded", None)),
            ErrorClass::Other,
            "a 4xx body must not make a client error retryable"
        );
        assert_eq!(error_class(&http(501, "", None)), ErrorClass::Other);
        assert_eq!(error_class(&timeout()), ErrorClass::Transient);
        let transport = LlmError::Transport {
            backend: "fake".into(),
            url: "http://x".into(),
            message: "connection refused".into(),
        };
        assert_eq!(error_class(&transport), ErrorClass::Transient);
        let auth = LlmError::Auth {
            backend: "fake".into(),
            message: "HTTP 401: bad key".into(),
        };
        assert_eq!(error_class(&auth), ErrorClass::Other);
        assert_eq!(
            error_class(&LlmError::NotConfigured("no model".into())),
            ErrorClass::Other
        );
    }

    #[test]
    fn backoff_stays_under_its_doubling_capped_ceiling() {
        let config = RetryConfig {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
            ..RetryConfig::default()
        };
        for _ in 0..200 {
            assert!(config.backoff(0) <= Duration::from_millis(100));
            assert!(config.backoff(1) <= Duration::from_millis(200));
            assert!(config.backoff(2) <= Duration::from_millis(350));
            assert!(config.backoff(40) <= Duration::from_millis(350));
        }
        let spread: std::collections::BTreeSet<Duration> =
            (0..50).map(|_| config.backoff(3)).collect();
        assert!(
            spread.len() > 5,
            "jitter must spread the delays: {spread:?}"
        );
    }

    #[test]
    fn retry_after_is_honoured_exactly_up_to_the_cap() {
        let config = fast();
        let asked = Duration::from_millis(1500);
        assert_eq!(
            config.next_delay(&http(429, "", Some(asked)), 0),
            Some(asked)
        );
        assert_eq!(
            config.next_delay(&http(503, "", Some(Duration::from_secs(3))), 0),
            None
        );
        assert_eq!(config.next_delay(&http(429, "", Some(asked)), 3), None);
        assert_eq!(config.next_delay(&timeout(), 2), None);
        assert!(config.next_delay(&timeout(), 1).is_some());
    }

    #[tokio::test]
    async fn an_error_before_the_first_event_is_retried() {
        let fake = Fake::new(vec![
            Scripted::Items(vec![Err(timeout())]),
            Scripted::Refuse(http(502, "bad gateway", None)),
            Scripted::Items(vec![
                text("ok"),
                Ok(ChatEvent::Finish {
                    reason: FinishReason::Stop,
                }),
            ]),
        ]);
        let retrying = RetryingBackend::new(fake, fast());
        let response = crate::collect(retrying.stream(&ChatRequest::default()).await.unwrap())
            .await
            .unwrap();
        assert_eq!(response.text, "ok");
        assert_eq!(*retrying.inner().calls.lock().unwrap(), 3);
    }

    #[tokio::test]
    async fn a_whole_answer_that_broke_midway_is_retried() {
        let fake = Fake::new(vec![
            Scripted::Items(vec![text("half"), Err(timeout())]),
            Scripted::Items(vec![
                text("whole"),
                Ok(ChatEvent::Finish {
                    reason: FinishReason::Stop,
                }),
            ]),
        ]);
        let retrying = RetryingBackend::new(fake, fast());
        let response = retrying.complete(&ChatRequest::default()).await.unwrap();
        assert_eq!(
            response.text, "whole",
            "nothing of the broken answer is kept"
        );
        assert_eq!(*retrying.inner().calls.lock().unwrap(), 2);
    }

    #[tokio::test]
    async fn a_first_item_error_given_up_on_stays_in_the_stream() {
        let fake = Fake::new(vec![Scripted::Items(vec![Err(LlmError::Protocol {
            backend: "fake".into(),
            message: "invalid JSON".into(),
        })])]);
        let retrying = RetryingBackend::new(fake, fast());
        let items: Vec<_> = retrying
            .stream(&ChatRequest::default())
            .await
            .unwrap()
            .collect()
            .await;
        assert!(
            matches!(items.as_slice(), [Err(LlmError::Protocol { .. })]),
            "{items:?}"
        );
        assert_eq!(*retrying.inner().calls.lock().unwrap(), 1);
    }

    #[tokio::test]
    async fn an_empty_answer_is_passed_on_without_retry() {
        let fake = Fake::new(vec![Scripted::Items(Vec::new())]);
        let retrying = RetryingBackend::new(fake, fast());
        let items: Vec<_> = retrying
            .stream(&ChatRequest::default())
            .await
            .unwrap()
            .collect()
            .await;
        assert!(items.is_empty());
    }

    #[tokio::test]
    async fn models_are_retried_and_work_through_a_shared_dyn_backend() {
        let fake: Arc<dyn ChatBackend> =
            Arc::new(Fake::new(vec![Scripted::Refuse(http(503, "busy", None))]));
        let retrying = RetryingBackend::from_arc(fake, fast());
        assert_eq!(retrying.models().await.unwrap(), ["m"]);
        assert_eq!(retrying.name(), "fake");
    }
}

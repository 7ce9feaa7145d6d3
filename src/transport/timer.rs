//! Waiting for an optional deadline inside `select!`.

use tokio::time::Instant;

/// Sleep until `deadline`; without one, never wake.
pub(crate) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

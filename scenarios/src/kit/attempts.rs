//! Recording what the SDK tried: an SDK attempt in the history's form, for
//! every scenario whose clients run the model's SDK.

use overcast_model::client::AttemptLog;
use overcast_model::retry::AttemptOutcome;
use overcast_sim::history::{Attempt, AttemptResult};

/// The history form of an SDK attempt.
pub fn attempt(a: &AttemptLog) -> Attempt {
    Attempt {
        sent_ns: a.sent_ns,
        waited_ns: a.waited.as_nanos() as u64,
        result: match &a.outcome {
            AttemptOutcome::Timeout => AttemptResult::Timeout,
            AttemptOutcome::NotSent => AttemptResult::NotSent,
            AttemptOutcome::Cancelled => AttemptResult::Cancelled,
            AttemptOutcome::Response {
                status,
                retry_after,
                ..
            } => AttemptResult::Status {
                status: *status,
                retry_after_ms: retry_after.map(|d| d.as_millis() as u64),
            },
        },
    }
}

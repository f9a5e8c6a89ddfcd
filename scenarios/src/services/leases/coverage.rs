//! Which cell of SPEC §2.3's (lease action × lease state) table, which row
//! of §2.4's break timing and which cell of §2.5's (use × lease state)
//! table each `leases` call reached, in the reference's view of the state:
//! the lease checkers' walk of the server's log (`super::check::analyse`)
//! places each granted action at its log record, each refused action at
//! the server's clock reading its answer carries, and each read, write or
//! delete at its record or over the readings the clock bound allows; a call
//! whose state the log leaves open is not placed. `overcast run leases
//! --coverage` and `overcast sweep leases --coverage` print the table.

use super::history::LeaseHistory;
use super::reference::{BlobUse, RefLease, RefState};
use overcast_harness::coverage::{Coverage, Row, Tables};
use overcast_model::lease::LeaseAction;
use std::collections::BTreeSet;

/// One call's (or log record's) place in the tables: a row, a cell, and the
/// calls it stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Visit {
    /// The row's id ([`ROWS`]).
    pub row: &'static str,
    /// The cell: a lease state's word, a break period's.
    pub cell: String,
    /// The calls placed here (a grant found in the log names the calls that
    /// were running then).
    pub ops: Vec<u64>,
}

/// The lease states, in the SPEC tables' column order.
const STATES: &[&str] = &["available", "leased", "breaking", "broken", "expired"];

/// Break periods, the columns of §2.4.
const PERIODS: &[&str] = &["absent", "0", "p"];

/// Why a row about the current ID has no `available` cell.
const NO_ID: &[(&str, &str)] = &[(
    "available",
    "no lease, so no current ID: such a call counts under another ID",
)];

/// A row whose cells are the lease states (§2.3, §2.5); `no_id`: it is
/// about the current ID, which `available` has not.
const fn by_state(id: &'static str, spec: &'static str, no_id: bool) -> Row {
    Row {
        id,
        spec,
        unreachable: None,
        cells: STATES,
        unreachable_cells: if no_id { NO_ID } else { &[] },
    }
}

/// The rows, in SPEC order: §2.3 (cells: the state the action found), §2.4
/// (cells: the break period), §2.5 (cells: the state the call found).
pub const ROWS: &[Row] = &[
    by_state("acquire.none", "§2.3 acquire, no proposed ID", false),
    by_state(
        "acquire.A",
        "§2.3 acquire, proposed A (the current ID)",
        true,
    ),
    by_state("acquire.B", "§2.3 acquire, proposed B (another ID)", false),
    by_state("renew.A", "§2.3 renew with A", true),
    by_state("renew.B", "§2.3 renew with B", false),
    by_state("change.A", "§2.3 change, x-ms-lease-id = A", true),
    by_state(
        "change.B_to_A",
        "§2.3 change, x-ms-lease-id = B, proposed = A (a retry)",
        true,
    ),
    by_state(
        "change.B_to_C",
        "§2.3 change, x-ms-lease-id = B, proposed = C (neither)",
        false,
    ),
    by_state("release.A", "§2.3 release with A", true),
    by_state("release.B", "§2.3 release with B", false),
    by_state("break", "§2.3 break", false),
    Row::new("break.leased_fixed", "§2.4 break of a fixed lease", PERIODS),
    Row::new(
        "break.leased_infinite",
        "§2.4 break of an infinite lease",
        PERIODS,
    ),
    Row::new("break.breaking", "§2.4 break of a breaking lease", PERIODS),
    by_state(
        "write.none",
        "§2.5 write or delete without a lease ID",
        false,
    ),
    by_state("write.A", "§2.5 write or delete with the matching ID", true),
    by_state("write.B", "§2.5 write or delete with another ID", false),
    by_state("read.none", "§2.5 read without a lease ID", false),
    by_state("read.A", "§2.5 read with the matching ID", true),
    by_state("read.B", "§2.5 read with another ID", false),
];

/// The tables `leases`' coverage counts.
pub const TABLES: Tables = Tables {
    title: "coverage of SPEC §2.3 / §2.4 / §2.5 (row, cell: the lease state the call found, or the break period)",
    rows: ROWS,
    unplaced: "answered calls no cell holds: container calls, creations, answers outside the tables (404, 400, throttles), calls whose state the log leaves open",
};

/// The cell of a read, write or delete whose state lies on both sides of
/// an expiry or a break within the server clock's possible readings.
pub const EITHER_STATE: &str = "either of two states (the clock bound)";

/// Whether `id` is the current lease's.
fn holds(l: Option<&RefLease>, id: &str) -> bool {
    l.is_some_and(|l| l.id == id.to_ascii_lowercase())
}

/// The §2.3 row of `action` on a resource whose lease is `before`.
pub fn action_row(action: &LeaseAction, before: Option<&RefLease>) -> &'static str {
    match action {
        LeaseAction::Acquire {
            proposed_id: None, ..
        } => "acquire.none",
        LeaseAction::Acquire {
            proposed_id: Some(p),
            ..
        } => {
            if holds(before, p) {
                "acquire.A"
            } else {
                "acquire.B"
            }
        }
        LeaseAction::Renew { lease_id } => {
            if holds(before, lease_id) {
                "renew.A"
            } else {
                "renew.B"
            }
        }
        LeaseAction::Change {
            lease_id,
            proposed_id,
        } => {
            if holds(before, lease_id) {
                "change.A"
            } else if proposed_id.as_deref().is_some_and(|p| holds(before, p)) {
                "change.B_to_A"
            } else {
                "change.B_to_C"
            }
        }
        LeaseAction::Release { lease_id } => {
            if holds(before, lease_id) {
                "release.A"
            } else {
                "release.B"
            }
        }
        LeaseAction::Break { .. } => "break",
    }
}

/// The §2.4 row and cell of a break granted in state `st` on `before`
/// (`None`: §2.4 has no row for the state).
pub fn break_row(
    st: RefState,
    before: Option<&RefLease>,
    break_period: Option<i64>,
) -> Option<(&'static str, &'static str)> {
    let cell = match break_period {
        None => "absent",
        Some(0) => "0",
        Some(_) => "p",
    };
    let row = match (st, before) {
        (RefState::Leased, Some(l)) if l.duration_ms.is_some() => "break.leased_fixed",
        (RefState::Leased, Some(_)) => "break.leased_infinite",
        (RefState::Breaking, _) => "break.breaking",
        _ => return None,
    };
    Some((row, cell))
}

/// The §2.5 row of a read, write or delete carrying `sent` on a blob whose
/// lease is `before`.
pub fn use_row_of(what: BlobUse, sent: Option<&str>, before: Option<&RefLease>) -> &'static str {
    let matching = sent.map(|id| holds(before, id));
    match (what, matching) {
        (BlobUse::Write, None) => "write.none",
        (BlobUse::Write, Some(true)) => "write.A",
        (BlobUse::Write, Some(false)) => "write.B",
        (BlobUse::Read, None) => "read.none",
        (BlobUse::Read, Some(true)) => "read.A",
        (BlobUse::Read, Some(false)) => "read.B",
    }
}

/// The coverage of one history from the visits of the lease checkers'
/// walk of it, and as unplaced every answered call no visit names.
pub fn of(history: &LeaseHistory, visits: Vec<Visit>) -> Coverage {
    let mut c = Coverage::new(TABLES);
    let mut placed = BTreeSet::new();
    for v in visits {
        placed.extend(v.ops.iter().copied());
        c.count(v.row, v.cell);
    }
    c.unplaced = history
        .ops
        .iter()
        .filter(|o| o.result.is_some() && !placed.contains(&o.id))
        .count() as u64;
    c
}

//! The reference spec the linearizability checker holds the store to, written
//! from SPEC §1.1 (not from the model's code) against the observable contract
//! only: one register per item holding a body (or nothing), an opaque ETag and
//! a Last-Modified date in whole seconds. Every status a request can get is
//! an output the spec judges: 200 / 201 / 202 / 304 / 400 / 404 / 409 / 412,
//! with the ETag, body and Last-Modified the response carried.
//!
//! ETags are opaque: the spec never orders them or reads a number out of
//! them; it only asks "is this the ETag of the current version?". They are
//! interned per history ([`Tag`]) so that states stay small. The model's own
//! version counter reaches the spec only as a hint ([`ItemResult::hint`]) for
//! the checker's version fast path: [`Spec::step`] never reads it, so every
//! "linearizable" verdict (a witness replayed through `step`) rests on ETags,
//! bodies, statuses and dates alone.

use overcast_sim::lin::{Claim, Next, Spec};
use serde::{Deserialize, Serialize};

/// An interned ETag: equal ids ⇔ equal ETag strings (quotes ignored).
pub type Tag = u32;

/// The value of an `If-Match` / `If-None-Match` header.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Match {
    /// `*`.
    Any,
    /// A list of ETags.
    Tags(Vec<Tag>),
}

impl Match {
    fn matches(&self, current: Tag) -> bool {
        match self {
            Match::Any => true,
            Match::Tags(t) => t.contains(&current),
        }
    }

    fn len(&self) -> usize {
        match self {
            Match::Any => 1,
            Match::Tags(t) => t.len(),
        }
    }
}

/// The conditional headers of one request; dates in whole seconds (the
/// resolution of an RFC 1123 date).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cond {
    /// `If-Match`.
    pub if_match: Option<Match>,
    /// `If-None-Match`.
    pub if_none_match: Option<Match>,
    /// `If-Modified-Since` (every value the header listed).
    pub if_modified_since: Option<Vec<u64>>,
    /// `If-Unmodified-Since` (every value the header listed).
    pub if_unmodified_since: Option<Vec<u64>>,
}

impl Cond {
    fn count(&self) -> usize {
        usize::from(self.if_match.is_some())
            + usize::from(self.if_none_match.is_some())
            + usize::from(self.if_modified_since.is_some())
            + usize::from(self.if_unmodified_since.is_some())
    }

    fn several_dates(&self) -> bool {
        self.if_modified_since.as_ref().is_some_and(|d| d.len() > 1)
            || self
                .if_unmodified_since
                .as_ref()
                .is_some_and(|d| d.len() > 1)
    }

    fn ims(&self) -> Option<u64> {
        self.if_modified_since
            .as_ref()
            .and_then(|d| d.first().copied())
    }

    fn ius(&self) -> Option<u64> {
        self.if_unmodified_since
            .as_ref()
            .and_then(|d| d.first().copied())
    }

    /// The dates the headers name (candidate Last-Modified values to try when
    /// the state's is unknown: `t` and `t + 1` cover both sides of every test).
    fn dates(&self) -> Few<u64> {
        let mut out = Few::one(0);
        for t in self.ims().into_iter().chain(self.ius()) {
            out.push(t);
            out.push(t + 1);
        }
        out
    }
}

/// Up to five values kept in place: the candidate Last-Modified values and
/// the decisions they reach (0, then `t` and `t + 1` for each of the two
/// date headers). The checker asks these on every step, and a vector each
/// time was a heap allocation per step.
#[derive(Clone, Copy, Debug)]
struct Few<T: Copy> {
    items: [T; 5],
    len: usize,
}

impl<T: Copy> Few<T> {
    fn one(first: T) -> Few<T> {
        Few {
            items: [first; 5],
            len: 1,
        }
    }

    fn push(&mut self, t: T) {
        self.items[self.len] = t;
        self.len += 1;
    }

    fn as_slice(&self) -> &[T] {
        &self.items[..self.len]
    }

    fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.items[..self.len]
    }
}

/// A version some response showed that no acknowledged write produced: the
/// ETag (and Last-Modified, when known) a write with an unknown outcome may
/// have got.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Orphan {
    /// The ETag.
    pub etag: Tag,
    /// Its Last-Modified, whole seconds.
    pub last_modified: Option<u64>,
}

/// What a client asked of one item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ItemOp {
    /// Get Blob with these conditions (SPEC §1.1.4).
    Read(Cond),
    /// Put Blob (an upsert) with these conditions (SPEC §1.1.3).
    Put {
        /// The body written.
        body: String,
        /// The conditions.
        cond: Cond,
        /// If the outcome is unknown: the orphan versions of the item, one of
        /// which may be the one this write made.
        orphans: Vec<Orphan>,
    },
    /// Delete Blob with these conditions (SPEC §1.1.3).
    Delete(Cond),
    /// Get Blob Properties (a HEAD) with these conditions: Get Blob's rules
    /// (SPEC §1.1.4), the ETag and Last-Modified of a 200 and no body.
    Head(Cond),
    /// Set Blob Metadata with these conditions: a write (SPEC §1.1.3) that
    /// keeps the body and gives the item a new ETag and Last-Modified; 404
    /// on an absent item.
    SetMetadata {
        /// The conditions.
        cond: Cond,
        /// If the outcome is unknown: the orphan versions of the item, one of
        /// which may be the one this write made (as [`ItemOp::Put`]'s).
        orphans: Vec<Orphan>,
    },
}

/// What the client saw: the status and what the response carried.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemResult {
    /// The HTTP status.
    pub status: u16,
    /// The ETag (200 and 304 reads: current; 200/201 writes: new).
    pub etag: Option<Tag>,
    /// The body (200 reads).
    pub body: Option<String>,
    /// Last-Modified, whole seconds (when the response had an item).
    pub last_modified: Option<u64>,
    /// The version the model says this ETag is: a hint for the fast path
    /// only, never judged.
    pub hint: Option<u64>,
}

/// State of one item. `etag: None` on a live item = a version made by a
/// write whose outcome was unknown and whose ETag nobody saw.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ItemState {
    /// The body (None = absent).
    pub body: Option<String>,
    /// The current ETag, when known.
    pub etag: Option<Tag>,
    /// The current Last-Modified (whole seconds), when known.
    pub last_modified: Option<u64>,
    /// Successful mutations so far: the spec's own count, for the fast path.
    pub mutations: u64,
}

/// The spec; holds the ETag strings for reports.
#[derive(Clone, Debug, Default)]
pub struct ItemSpec {
    /// The ETag each [`Tag`] stands for.
    pub tags: Vec<String>,
    /// Whether to hand the checker version claims from the model's hints
    /// (its fast path and search pruning trust them); off, the verdict rests
    /// on [`Spec::step`] alone.
    pub use_hints: bool,
}

/// How a write's conditions decide (SPEC §1.1.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    Proceed,
    Refuse(u16),
}

/// Whether the current ETag is `t`: unknown (`None`) ETags match no header
/// value, since a client can only name ETags it saw.
fn is(current: Option<Tag>, m: &Match) -> bool {
    match (m, current) {
        (Match::Any, _) => true,
        (m, Some(c)) => m.matches(c),
        (_, None) => false,
    }
}

/// SPEC §1.1.3 for a write, given the state's Last-Modified `lm`.
fn write_decision(c: &Cond, s: &ItemState, lm: u64, is_put: bool) -> Decision {
    // Step 1: the combination, before any state is read.
    let one_tag = |m: &Option<Match>| m.as_ref().is_none_or(|m| m.len() <= 1);
    if !one_tag(&c.if_match) || !one_tag(&c.if_none_match) || c.several_dates() {
        return Decision::Refuse(400);
    }
    match c.count() {
        0 | 1 => {}
        2 if (c.if_match.is_some() && c.ius().is_some())
            || (c.if_none_match.is_some() && c.ims().is_some()) => {}
        _ => return Decision::Refuse(400),
    }
    let exists = s.body.is_some();
    // Step 2: the first header present decides.
    if let Some(inm) = &c.if_none_match {
        return match (inm, exists) {
            (_, false) => Decision::Proceed,
            (Match::Any, true) => Decision::Refuse(if is_put { 409 } else { 412 }),
            (m, true) if is(s.etag, m) => Decision::Refuse(412),
            _ => Decision::Proceed,
        };
    }
    if let Some(im) = &c.if_match {
        return if exists && is(s.etag, im) {
            Decision::Proceed
        } else {
            Decision::Refuse(412)
        };
    }
    if let (Some(t), true) = (c.ims(), exists) {
        return if lm <= t {
            Decision::Refuse(412)
        } else {
            Decision::Proceed
        };
    }
    if let (Some(t), true) = (c.ius(), exists) {
        return if t < lm {
            Decision::Refuse(412)
        } else {
            Decision::Proceed
        };
    }
    Decision::Proceed
}

/// SPEC §1.1.4 for a read, given the state's Last-Modified `lm`: the status.
fn read_status(c: &Cond, s: &ItemState, lm: u64) -> u16 {
    if c.several_dates() || matches!(c.if_none_match, Some(Match::Any)) {
        return 400;
    }
    if s.body.is_none() {
        return 404;
    }
    let im = c.if_match.as_ref().map(|m| is(s.etag, m));
    let ius = c.ius().map(|t| lm <= t);
    let inm = c.if_none_match.as_ref().map(|m| !is(s.etag, m));
    let ims = c.ims().map(|t| t < lm);
    if im == Some(false) || ius == Some(false) {
        412
    } else if (inm == Some(false) && ims != Some(true)) || (ims == Some(false) && inm != Some(true))
    {
        304
    } else {
        200
    }
}

impl ItemSpec {
    /// The Last-Modified values to evaluate `c` with in `s`: the known one,
    /// or (unknown) one on each side of every date the headers name.
    fn lms(c: &Cond, s: &ItemState) -> Few<u64> {
        match s.last_modified {
            Some(lm) => Few::one(lm),
            None => c.dates(),
        }
    }

    /// Whether a read (a HEAD when `head`: the same, without the body)
    /// answered `out` in `s`.
    fn read_ok(c: &Cond, s: &ItemState, out: &ItemResult, head: bool) -> bool {
        Self::lms(c, s)
            .as_slice()
            .iter()
            .any(|lm| read_status(c, s, *lm) == out.status)
            && match out.status {
                // An ETag nobody was told by its write is one no response showed
                // either (every ETag a response showed is an acknowledged write's
                // or an orphan, which the unknown write's other branches carry).
                200 => {
                    (if head {
                        out.body.is_none()
                    } else {
                        out.body == s.body
                    }) && out.etag == s.etag
                        && (s.last_modified.is_none() || out.last_modified == s.last_modified)
                }
                304 => {
                    out.body.is_none()
                        && out.etag == s.etag
                        && (s.last_modified.is_none()
                            || out.last_modified.is_none()
                            || out.last_modified == s.last_modified)
                }
                _ => out.body.is_none() && out.etag.is_none(),
            }
    }

    /// The decisions a write's conditions may reach in `s`.
    fn decisions(c: &Cond, s: &ItemState, is_put: bool) -> Few<Decision> {
        let lms = Self::lms(c, s);
        let mut all = lms
            .as_slice()
            .iter()
            .map(|lm| write_decision(c, s, *lm, is_put));
        let mut d = Few::one(all.next().expect("at least one Last-Modified"));
        all.for_each(|x| d.push(x));
        d.as_mut_slice().sort_by_key(|x| match x {
            Decision::Proceed => 0,
            Decision::Refuse(s) => *s,
        });
        // Sorted: keep the first of each run of equal decisions.
        let mut kept = 1;
        for i in 1..d.len {
            if d.items[i] != d.items[kept - 1] {
                d.items[kept] = d.items[i];
                kept += 1;
            }
        }
        d.len = kept;
        d
    }

    fn step_put(
        s: &ItemState,
        body: &str,
        c: &Cond,
        orphans: &[Orphan],
        out: Option<&ItemResult>,
    ) -> Next<ItemState> {
        let decisions = Self::decisions(c, s, true);
        let decisions = decisions.as_slice();
        let may_apply = decisions.contains(&Decision::Proceed);
        let written = |etag: Option<Tag>, last_modified: Option<u64>| ItemState {
            body: Some(body.to_string()),
            etag,
            last_modified,
            mutations: s.mutations + 1,
        };
        match out {
            None => unknown_write(s, decisions, orphans, written),
            Some(o) if o.status == 200 || o.status == 201 => {
                // Put Blob answers 201 Created on a create and on a replace alike;
                // a 200 from a put is never right.
                match o.etag {
                    Some(e) if may_apply && o.status == 201 && s.etag != Some(e) => {
                        Next::One(written(Some(e), o.last_modified))
                    }
                    _ => Next::Illegal,
                }
            }
            Some(o) => {
                if decisions.contains(&Decision::Refuse(o.status)) && o.etag.is_none() {
                    Next::One(s.clone())
                } else {
                    Next::Illegal
                }
            }
        }
    }

    /// Set Blob Metadata: the write rules of a delete (`If-None-Match: *` on
    /// an existing item is 412, an absent item that passed is 404); applied,
    /// the body stays and the ETag is new.
    fn step_set_metadata(
        s: &ItemState,
        c: &Cond,
        orphans: &[Orphan],
        out: Option<&ItemResult>,
    ) -> Next<ItemState> {
        let mut decisions = Self::decisions(c, s, false);
        if s.body.is_none() {
            for d in decisions.as_mut_slice() {
                if *d == Decision::Proceed {
                    *d = Decision::Refuse(404);
                }
            }
        }
        let decisions = decisions.as_slice();
        let may_apply = decisions.contains(&Decision::Proceed);
        let changed = |etag: Option<Tag>, last_modified: Option<u64>| ItemState {
            body: s.body.clone(),
            etag,
            last_modified,
            mutations: s.mutations + 1,
        };
        match out {
            None => unknown_write(s, decisions, orphans, changed),
            // Set Blob Metadata answers 200 with the new ETag, never the old one.
            Some(o) if o.status == 200 => match o.etag {
                Some(e) if may_apply && o.body.is_none() && s.etag != Some(e) => {
                    Next::One(changed(Some(e), o.last_modified))
                }
                _ => Next::Illegal,
            },
            Some(o) if decisions.contains(&Decision::Refuse(o.status)) && o.etag.is_none() => {
                Next::One(s.clone())
            }
            Some(_) => Next::Illegal,
        }
    }

    fn step_delete(s: &ItemState, c: &Cond, out: Option<&ItemResult>) -> Next<ItemState> {
        let mut decisions = Self::decisions(c, s, false);
        // Step 4: an absent item that passed its conditions: 404.
        if s.body.is_none() {
            for d in decisions.as_mut_slice() {
                if *d == Decision::Proceed {
                    *d = Decision::Refuse(404);
                }
            }
        }
        let deleted = ItemState {
            body: None,
            etag: None,
            last_modified: None,
            mutations: s.mutations + 1,
        };
        let decisions = decisions.as_slice();
        let may_apply = decisions.contains(&Decision::Proceed);
        match out {
            None => {
                let mut next = Vec::new();
                if may_apply {
                    next.push(deleted);
                }
                if decisions.iter().any(|d| *d != Decision::Proceed) {
                    next.push(s.clone());
                }
                Next::Many(next)
            }
            Some(o) if o.status == 202 && may_apply && o.etag.is_none() => Next::One(deleted),
            Some(o) if decisions.contains(&Decision::Refuse(o.status)) && o.etag.is_none() => {
                Next::One(s.clone())
            }
            Some(_) => Next::Illegal,
        }
    }

    fn tag(&self, t: Tag) -> &str {
        self.tags.get(t as usize).map_or("?", String::as_str)
    }

    fn describe_match(&self, m: &Match) -> String {
        match m {
            Match::Any => "*".into(),
            Match::Tags(t) => t
                .iter()
                .map(|t| self.tag(*t).to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    fn describe_cond(&self, c: &Cond) -> String {
        let mut out = String::new();
        if let Some(m) = &c.if_match {
            out += &format!(" If-Match: {}", self.describe_match(m));
        }
        if let Some(m) = &c.if_none_match {
            out += &format!(" If-None-Match: {}", self.describe_match(m));
        }
        if let Some(d) = &c.if_modified_since {
            out += &format!(" If-Modified-Since: {}", dates_words(d));
        }
        if let Some(d) = &c.if_unmodified_since {
            out += &format!(" If-Unmodified-Since: {}", dates_words(d));
        }
        out
    }
}

/// An HTTP date (whole seconds since the Unix epoch, as a server's clock
/// read it) in the page's words: seconds on that clock since the
/// simulation's start (`1 s on the server's clock`), never an epoch count.
pub fn date_words(secs: u64) -> String {
    let since_start = secs.saturating_sub(overcast_sim::clock::EPOCH_MS / 1000);
    format!("{since_start} s on the server's clock")
}

/// The dates of a repeated date header, in words.
fn dates_words(d: &[u64]) -> String {
    d.iter()
        .map(|s| date_words(*s))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Spec for ItemSpec {
    type State = ItemState;
    type Input = ItemOp;
    type Output = ItemResult;

    fn init(&self, _key: &str) -> ItemState {
        ItemState {
            body: None,
            etag: None,
            last_modified: None,
            mutations: 0,
        }
    }

    fn step(&self, s: &ItemState, op: &ItemOp, out: Option<&ItemResult>) -> Next<ItemState> {
        match op {
            ItemOp::Read(c) | ItemOp::Head(c) => match out {
                Some(o) if !Self::read_ok(c, s, o, matches!(op, ItemOp::Head(_))) => Next::Illegal,
                _ => Next::One(s.clone()),
            },
            ItemOp::Put {
                body,
                cond,
                orphans,
            } => Self::step_put(s, body, cond, orphans, out),
            ItemOp::Delete(c) => Self::step_delete(s, c, out),
            ItemOp::SetMetadata { cond, orphans } => Self::step_set_metadata(s, cond, orphans, out),
        }
    }

    fn is_legal(&self, s: &ItemState, op: &ItemOp, out: Option<&ItemResult>) -> bool {
        match (op, out) {
            (ItemOp::Read(c), Some(o)) => Self::read_ok(c, s, o, false),
            (ItemOp::Head(c), Some(o)) => Self::read_ok(c, s, o, true),
            _ => self.step(s, op, out).is_legal(),
        }
    }

    fn is_read_only(&self, op: &ItemOp, out: Option<&ItemResult>) -> bool {
        matches!(op, ItemOp::Read(_) | ItemOp::Head(_))
            || out.is_some_and(|r| !matches!(r.status, 200..=202))
    }

    fn version_of(&self, s: &ItemState) -> Option<u64> {
        self.use_hints.then_some(s.mutations)
    }

    fn claim(&self, op: &ItemOp, out: &ItemResult) -> Claim {
        if !self.use_hints {
            return Claim::None;
        }
        match (op, out.status, out.hint) {
            (ItemOp::Read(_) | ItemOp::Head(_), 200 | 304, Some(v)) => Claim::At(v),
            (ItemOp::Put { .. }, 200 | 201, Some(v)) => Claim::Produced(v),
            (ItemOp::SetMetadata { .. }, 200, Some(v)) => Claim::Produced(v),
            _ => Claim::None,
        }
    }

    fn describe_op(&self, op: &ItemOp, out: Option<&ItemResult>) -> String {
        let call = match op {
            ItemOp::Read(c) => format!("read{}", self.describe_cond(c)),
            ItemOp::Put { body, cond, .. } => format!("put {body:?}{}", self.describe_cond(cond)),
            ItemOp::Delete(c) => format!("delete{}", self.describe_cond(c)),
            ItemOp::Head(c) => format!("head{}", self.describe_cond(c)),
            ItemOp::SetMetadata { cond, .. } => {
                format!("set metadata{}", self.describe_cond(cond))
            }
        };
        let seen = match out {
            None => "unknown".to_string(),
            Some(o) => {
                let mut t = o.status.to_string();
                if let Some(b) = &o.body {
                    t += &format!(" {b:?}");
                }
                if let Some(e) = o.etag {
                    t += &format!(" {}", self.tag(e));
                }
                if let Some(lm) = o.last_modified {
                    t += &format!(" Last-Modified {}", date_words(lm));
                }
                t
            }
        };
        format!("{call} → {seen}")
    }

    fn describe_state(&self, s: &ItemState) -> String {
        match &s.body {
            None => "absent".to_string(),
            Some(b) => format!(
                "{b:?} {}{}",
                s.etag.map_or("(ETag unseen)", |e| self.tag(e)),
                s.last_modified.map_or(String::new(), |lm| format!(
                    " Last-Modified {}",
                    date_words(lm)
                ))
            ),
        }
    }

    fn describe_need(&self, op: &ItemOp, out: &ItemResult) -> Option<String> {
        Some(match (op, out.status) {
            (ItemOp::Read(_), 200) => format!(
                "the item to hold {:?} with ETag {}",
                out.body.as_deref().unwrap_or(""),
                out.etag.map_or("?", |e| self.tag(e))
            ),
            (ItemOp::Head(_), 200) => format!(
                "the item to exist with ETag {} and the conditions to hold",
                out.etag.map_or("?", |e| self.tag(e))
            ),
            (ItemOp::SetMetadata { .. }, 200) => format!(
                "the conditions to hold on a present item whose ETag is not {}",
                out.etag.map_or("?", |e| self.tag(e))
            ),
            (_, 404) => {
                "the item to be absent (or its conditions to pass on an absent item)".into()
            }
            (_, 304) => "the item unchanged since the condition's ETag or date".into(),
            (_, 201) => "the conditions to hold (on a present or an absent item)".into(),
            (_, 200 | 202) => "the conditions to hold on a present item".into(),
            (_, 409) => "the item to exist".into(),
            (_, 412) => "a condition to fail".into(),
            (_, 400) => "an illegal header combination".into(),
            _ => return None,
        })
    }
}

/// The states a write with an unknown outcome may leave: applied (`made`
/// with each orphan's ETag, or with one no answer showed) when a decision
/// lets it proceed, unchanged when one refuses it.
fn unknown_write(
    s: &ItemState,
    decisions: &[Decision],
    orphans: &[Orphan],
    made: impl Fn(Option<Tag>, Option<u64>) -> ItemState,
) -> Next<ItemState> {
    let mut next: Vec<ItemState> = Vec::new();
    if decisions.contains(&Decision::Proceed) {
        next.extend(orphans.iter().map(|o| made(Some(o.etag), o.last_modified)));
        next.push(made(None, None));
    }
    if decisions.iter().any(|d| *d != Decision::Proceed) {
        next.push(s.clone());
    }
    Next::Many(next)
}

//! The sequential specification a history is checked against, and its
//! optional version extension.

use std::fmt::Debug;
use std::hash::Hash;

/// The states an operation may lead to from one state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next<S> {
    /// The operation (with its observed output) is not possible in this state.
    Illegal,
    /// The operation is possible and leads to exactly this state.
    One(S),
    /// The operation is possible and may lead to any of these states
    /// (a nondeterministic spec, or an unknown outcome that may go several ways).
    /// An empty list means the same as [`Next::Illegal`].
    Many(Vec<S>),
}

impl<S> Next<S> {
    /// True unless the step is illegal.
    pub fn is_legal(&self) -> bool {
        match self {
            Next::Illegal => false,
            Next::One(_) => true,
            Next::Many(v) => !v.is_empty(),
        }
    }

    /// Calls `f` on every next state.
    pub fn for_each(self, mut f: impl FnMut(S)) {
        match self {
            Next::Illegal => {}
            Next::One(s) => f(s),
            Next::Many(v) => v.into_iter().for_each(f),
        }
    }
}

impl<S> From<Option<S>> for Next<S> {
    fn from(o: Option<S>) -> Self {
        match o {
            Some(s) => Next::One(s),
            None => Next::Illegal,
        }
    }
}

/// What a completed operation says about the version of its key, for the
/// version-aware fast path (see [`Spec::claim`]).
///
/// The contract a spec promises when it returns claims (and a
/// [`Spec::version_of`]) is:
/// * every legal step, with any output (known or unknown), either keeps the
///   version of the state or raises it by exactly one;
/// * an operation claiming [`Claim::At`]`(v)` is legal only in states of version
///   `v`, and does not change the version;
/// * an operation claiming [`Claim::Produced`]`(v)` is legal only in states of
///   version `v - 1`, and leads to states of version `v`.
///
/// Under that contract the checker may decide from the claims alone; it still
/// replays every witness through [`Spec::step`] before saying "linearizable",
/// and falls back to the exhaustive search whenever the claims do not settle
/// the question. A spec that breaks the contract may get wrong verdicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Claim {
    /// The output says nothing about versions.
    None,
    /// The operation observed version `v` and left it unchanged (a read, a
    /// failed conditional write that reports the current version).
    At(u64),
    /// The operation succeeded and produced version `v` (from `v - 1`).
    Produced(u64),
}

/// A sequential specification of one independent object (one key): its
/// initial state and what each operation does.
///
/// Operations with an unknown outcome are stepped with `output = None`: the
/// step must then accept the operation in every state where it could take
/// effect and return the states it could lead to (including "no change" where
/// the operation would fail, e.g. a compare-and-set whose comparison does not
/// hold).
pub trait Spec: Sync {
    /// The state of one key. Hashing and equality must be exact: the search
    /// merges equal states.
    type State: Clone + Eq + Hash + Debug + Send + Sync;
    /// An operation's input (what was asked).
    type Input: Debug + Send + Sync;
    /// An operation's observed output (what was answered).
    type Output: Debug + Send + Sync;

    /// The initial state of `key`.
    fn init(&self, key: &str) -> Self::State;

    /// The states reachable from `state` by the operation `input` answering
    /// `output` (`None`: outcome unknown).
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Next<Self::State>;

    /// Whether the operation is possible in `state` (used for read-only
    /// operations, very often). Default: `step(..).is_legal()`; override to
    /// skip building the next state.
    fn is_legal(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> bool {
        self.step(state, input, output).is_legal()
    }

    /// True if the operation, with this output, never changes the state in any
    /// state where it is legal (a read, a failed compare-and-set). The checker
    /// places such operations eagerly and drops them when their output is
    /// unknown (an answered read whose result is unusable constrains nothing).
    /// Default: `false` (always safe, slower).
    fn is_read_only(&self, input: &Self::Input, output: Option<&Self::Output>) -> bool {
        let _ = (input, output);
        false
    }

    /// Optional version extension: the version of a state, if the spec tracks
    /// versions. Default: `None` (no version-aware fast path).
    fn version_of(&self, state: &Self::State) -> Option<u64> {
        let _ = state;
        None
    }

    /// Optional version extension: what a completed operation's output says
    /// about versions (see [`Claim`] for the contract). Default: [`Claim::None`].
    fn claim(&self, input: &Self::Input, output: &Self::Output) -> Claim {
        let _ = (input, output);
        Claim::None
    }

    /// Optional symmetry hint: which of one key's operations (input, output;
    /// `None`: unknown outcome) are *blind writes*. The contract: a blind
    /// write has an unknown outcome, is legal in every state, and any two
    /// blind writes applied to the same state lead to states that no other
    /// operation of the key can tell apart (the same ones are legal, with
    /// outputs that again cannot tell them apart): e.g. puts of values that
    /// no operation reads or expects. The checker then tries only one pending
    /// blind write at each point instead of every one. Default: none.
    fn blind_writes(&self, ops: &[(&Self::Input, Option<&Self::Output>)]) -> Vec<bool> {
        vec![false; ops.len()]
    }

    /// Optional value view of a register-like spec, for the search's value
    /// reductions: per operation of one key (input, output; `None`: unknown
    /// outcome), which value it needs, compares with and writes, numbered.
    /// With it the search (1) merges states whose value no remaining
    /// operation can observe, (2) tries only the earliest-returning of the
    /// interchangeable unconditional writes of such values, and (3) drops a
    /// configuration that overwrote a value some operation still needs when
    /// nothing can write that value again. The contract is on [`Values`].
    /// Default: `None` (no value reductions).
    fn values(&self, ops: &[(&Self::Input, Option<&Self::Output>)]) -> Option<Values<Self::State>> {
        let _ = ops;
        None
    }

    /// Optional register view, for the unique-values pass
    /// ([`crate::unique`]): given one key's initial state and operations
    /// (input, output; `None`: unknown outcome), what each operation does as
    /// an operation of a register holding a numbered value and a version.
    /// When every value is written by at most one operation and never
    /// equals the initial one, the pass decides most such keys in
    /// O(n log n) without a search. The contract is on [`RegisterView`].
    /// Not asked for a key where some operation observed a version
    /// ([`Claim::At`] from [`Spec::claim`]): a register operation's read
    /// says only the value, so such keys are the version-aware path's.
    /// May be asked for a prefix of the key's operations first: `None`
    /// there is taken to mean `None` for the whole key (as when an append,
    /// a version in an output or a value written twice rules the view out).
    /// Default: `None` (no unique-values pass).
    fn register(
        &self,
        init: &Self::State,
        ops: &[(&Self::Input, Option<&Self::Output>)],
    ) -> Option<RegisterView> {
        let _ = (init, ops);
        None
    }

    /// Optional dead-state view, for specs whose states may grow past what
    /// any operation can observe (e.g. a value built by appends): given one
    /// key's operations (input, output; `None`: unknown outcome) and, per
    /// operation, the index of the last event at which it may still be
    /// placed (`u32::MAX`: none), says until when a state can still matter.
    /// With it the search replaces every state whose observers have all
    /// been placed by one canonical dead state, so that such configurations
    /// merge. Used only when [`Spec::values`] gives no value view. The
    /// contract is on [`DeadStates`]. Default: `None`.
    fn dead_states(
        &self,
        ops: &[(&Self::Input, Option<&Self::Output>)],
        last_event: &[u32],
    ) -> Option<DeadStates<Self::State>> {
        let _ = (ops, last_event);
        None
    }

    /// A short human description of an operation and its output, for reports.
    /// Default: the `Debug` forms.
    fn describe_op(&self, input: &Self::Input, output: Option<&Self::Output>) -> String {
        match output {
            Some(o) => format!("{input:?} -> {o:?}"),
            None => format!("{input:?} -> ?"),
        }
    }

    /// A short human description of a state, for reports. Default: `Debug`.
    fn describe_state(&self, state: &Self::State) -> String {
        format!("{state:?}")
    }

    /// In words, the state an operation with this output needs in order to be
    /// placed (e.g. "the value \"5\""), for the failure sentence. Default: `None`.
    fn describe_need(&self, input: &Self::Input, output: &Self::Output) -> Option<String> {
        let _ = (input, output);
        None
    }
}

/// How one operation uses its key's value, for [`Spec::values`] (values are
/// numbered per key; equal numbers for equal values).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ValueUse {
    /// The operation (with its output) is legal only in states holding this
    /// value (a read of it, a successful compare-and-set expecting it).
    pub needs: Option<u32>,
    /// Its legality or effect depends on the state's value only through
    /// whether it equals this one (set whenever `needs` is).
    pub observes: Option<u32>,
    /// The value it leaves in the state when it changes the value.
    pub writes: Option<u32>,
    /// Legal in every state, and the state after it depends on nothing but
    /// the operation (a plain put).
    pub unconditional: bool,
}

/// The number of a state's value (see [`Values::value_of`]).
pub type ValueOf<S> = Box<dyn Fn(&S) -> Option<u32> + Send + Sync>;

/// A key's value view, from [`Spec::values`].
///
/// The contract: an operation's legality and effect depend on the state's
/// value only as its [`ValueUse`] says; a step changes the value only to the
/// operation's `writes` value; `overwritten(s)` is `s` with its value replaced
/// by one that no operation of the key needs, observes or writes (every
/// other part of the state kept); `value_of` numbers values as `uses` does
/// (`None` for a value no operation needs, observes or writes). A spec that
/// breaks the contract may get wrong verdicts.
pub struct Values<S> {
    /// Per operation, in the order given to [`Spec::values`].
    pub uses: Vec<ValueUse>,
    /// The number of a state's value.
    pub value_of: ValueOf<S>,
    /// The state with its value replaced by one nobody observes.
    pub overwritten: Box<dyn Fn(&S) -> S + Send + Sync>,
}

/// The last event of an operation that may still tell a state apart from
/// the dead one (see [`DeadStates::last_observer`]).
pub type LastObserver<S> = Box<dyn Fn(&S) -> Option<u32> + Send + Sync>;

/// A key's dead-state view, from [`Spec::dead_states`].
///
/// The contract: let `t` be an event index and `s` a state with
/// `last_observer(s)` `None` or below `t`. Then `s` and `dead(s)` cannot be
/// told apart by the operations whose `last_event` is at least `t`: for any
/// sequence of them, it is legal from `s` iff it is legal from `dead(s)`,
/// and the states it leads to are again such a pair (or equal).
/// `last_observer(dead(s))` is `None`. A spec that breaks the contract may
/// get wrong verdicts.
pub struct DeadStates<S> {
    /// The largest `last_event` among the operations that may tell `s` (or
    /// a state the key's operations lead to from it) apart from `dead(s)`;
    /// `None` when there is none.
    pub last_observer: LastObserver<S>,
    /// The canonical dead state standing for `s`.
    pub dead: Box<dyn Fn(&S) -> S + Send + Sync>,
}

/// A condition a register operation compares the state with, for
/// [`RegisterOp`] (values numbered as in [`RegisterView`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Guard {
    /// The register holds this value (a compare-and-set by value).
    Value(u32),
    /// The register is at this version (a conditional put by version).
    Version(u64),
}

/// What one operation of a key does, as a register operation
/// ([`Spec::register`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegisterOp {
    /// Legal only where the register holds this value; changes nothing (a
    /// get's answer).
    Read(u32),
    /// Legal only where the guard does not hold; changes nothing (a
    /// compare-and-set or conditional put that answered "failed").
    Refused(Guard),
    /// Legal only where the guard holds (always without one); writes the
    /// value and raises the version by one (an acknowledged put, a
    /// successful compare-and-set or conditional put).
    Wrote {
        /// The value written.
        value: u32,
        /// The condition it took effect under.
        guard: Option<Guard>,
    },
    /// An unknown outcome: legal everywhere; where the guard holds (always
    /// without one) it writes the value and raises the version by one,
    /// elsewhere it changes nothing; it may also never take effect.
    MayWrite {
        /// The value it writes if it takes effect.
        value: u32,
        /// The condition it takes effect under.
        guard: Option<Guard>,
    },
}

/// A key's register view, from [`Spec::register`].
///
/// The contract: a state of the key is a value and a version (values
/// numbered; equal numbers for equal values); the key starts with value
/// `init` at version `init_version`; every operation is legal, and leads
/// to the states, exactly as its [`RegisterOp`] says (a write raises the
/// version by one; a view with no [`Guard::Version`] may keep the version
/// fixed, as nothing then compares it). A spec with operations that do anything else returns
/// `None`. The pass replays every witness through [`Spec::step`] before
/// saying "linearizable"; its refutations rely on the contract, so a spec
/// that breaks it may get wrong verdicts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterView {
    /// The number of the initial value.
    pub init: u32,
    /// The initial version.
    pub init_version: u64,
    /// Per operation, in the order given to [`Spec::register`].
    pub ops: Vec<RegisterOp>,
}

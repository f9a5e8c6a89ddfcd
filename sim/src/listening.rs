//! Which nodes listen, as TCP would tell a client: a node whose process the
//! world killed listens nowhere until its next incarnation says it listens
//! again (a server binds its address after its quiet time), and a connect to
//! it meanwhile is refused at once (the host answers a reset). Shared by the
//! world, which records the kills, and the nodes, which record their binds and
//! ask before they connect. Nothing in it is drawn or timed: it follows the
//! fault plan.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

/// The nodes that listen nowhere now: killed, and not listening since.
#[derive(Clone, Debug, Default)]
pub struct Listening {
    silent: Arc<Mutex<BTreeSet<String>>>,
}

impl Listening {
    fn lock(&self) -> MutexGuard<'_, BTreeSet<String>> {
        self.silent.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The world killed `node`'s process: nothing of it listens any more.
    pub fn killed(&self, node: &str) {
        self.lock().insert(node.to_string());
    }

    /// `node`'s process listens again (its server bound its address).
    pub fn listens(&self, node: &str) {
        self.lock().remove(node);
    }

    /// Whether a connect to `node` is refused now: its process was killed and
    /// its next one does not listen yet. A node never killed is listening
    /// from the start (its server binds before any client's first send can
    /// arrive), and a paused one still listens (its host holds the socket).
    pub fn refuses(&self, node: &str) -> bool {
        self.lock().contains(node)
    }
}

//! What the world did, as a type: each [`Happening`] is written (and saved,
//! and hashed into a run's trace) as the one line of text the world has
//! always written for it, and read back from that line.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// One thing the world did (or a note a scenario adds beside them). Its
/// text is [`Display`](fmt::Display); [`Happening::read`] turns that text
/// back into the same value, so saved files hold the text alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Happening {
    /// `crash NODE for MS ms`: a node killed, to restart after `down_ms`.
    Crash {
        /// The node crashed.
        node: String,
        /// How long it stays down.
        down_ms: u64,
    },
    /// `restart NODE`: a crashed node started again.
    Restart(String),
    /// `pause NODE for MS ms`: a node frozen, to resume after `for_ms`.
    Pause {
        /// The node paused.
        node: String,
        /// How long it stays paused.
        for_ms: u64,
    },
    /// `resume NODE`: a paused node running again.
    Resume(String),
    /// `partition ["A", ...] <-> ["B", ...] for MS ms` (`->` when one way):
    /// the links between two groups cut.
    Partition {
        /// One side.
        from: Vec<String>,
        /// The other side.
        to: Vec<String>,
        /// Only `from` → `to` is cut.
        one_way: bool,
        /// For how long.
        for_ms: u64,
    },
    /// `partition healed`: a partition's links mended.
    PartitionHealed,
    /// `isolate TARGET: NODE` (or `isolate TARGET: names no node`): the node
    /// a fault's target named at its start, before its partition.
    Isolate {
        /// The target the fault named, e.g. `primary`.
        target: String,
        /// The node it named then, if any.
        node: Option<String>,
    },
    /// `clock rate [TARGET: ]NODE +D ppm[, PEER, ... +P ppm] for MS ms`: a
    /// node's clock (and its peers') held at a rate for a while.
    ClockRate {
        /// The target the fault named (the node itself when it named one).
        target: String,
        /// The node whose clock changed rate.
        node: String,
        /// Its rate, ppm.
        drift_ppm: i64,
        /// The other nodes held at `peers_ppm`.
        peers: Vec<String>,
        /// Their rate, ppm.
        peers_ppm: i64,
        /// For how long.
        for_ms: u64,
    },
    /// `clock rate TARGET: names no node`: a clock-rate fault that found no
    /// node to act on.
    ClockRateMissed(String),
    /// `heal`: every fault healed; the quiet phase follows.
    Heal,
    /// `end`: the run's end.
    End,
    /// Any other line: a note a scenario adds to the world's events.
    Note(String),
}

impl fmt::Display for Happening {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Happening::Crash { node, down_ms } => write!(f, "crash {node} for {down_ms} ms"),
            Happening::Restart(node) => write!(f, "restart {node}"),
            Happening::Pause { node, for_ms } => write!(f, "pause {node} for {for_ms} ms"),
            Happening::Resume(node) => write!(f, "resume {node}"),
            Happening::Partition {
                from,
                to,
                one_way,
                for_ms,
            } => {
                let arrow = if *one_way { "->" } else { "<->" };
                write!(f, "partition {from:?} {arrow} {to:?} for {for_ms} ms")
            }
            Happening::PartitionHealed => f.write_str("partition healed"),
            Happening::Isolate { target, node } => match node {
                Some(node) => write!(f, "isolate {target}: {node}"),
                None => write!(f, "isolate {target}: names no node"),
            },
            Happening::ClockRate {
                target,
                node,
                drift_ppm,
                peers,
                peers_ppm,
                for_ms,
            } => {
                f.write_str("clock rate ")?;
                if node != target {
                    write!(f, "{target}: ")?;
                }
                write!(f, "{node} {drift_ppm:+} ppm")?;
                if !peers.is_empty() {
                    write!(f, ", {} {peers_ppm:+} ppm", peers.join(", "))?;
                }
                write!(f, " for {for_ms} ms")
            }
            Happening::ClockRateMissed(target) => write!(f, "clock rate {target}: names no node"),
            Happening::Heal => f.write_str("heal"),
            Happening::End => f.write_str("end"),
            Happening::Note(text) => f.write_str(text),
        }
    }
}

impl Happening {
    /// The happening a line of text says: the value whose text it is, or a
    /// [`Happening::Note`] of the line when no other variant writes it
    /// exactly (so `read(h.to_string())` writes `h`'s text again).
    pub fn read(text: &str) -> Happening {
        match Happening::structured(text) {
            Some(h) if h.to_string() == text => h,
            _ => Happening::Note(text.to_string()),
        }
    }

    /// What a person reads for it: its text, but with a partition's groups
    /// as plain lists of nodes (`partition a, b ⇹ c for 5 ms`, `→` when one
    /// way) instead of the quoted lists its saved text holds.
    pub fn words(&self) -> String {
        match self {
            Happening::Partition {
                from,
                to,
                one_way,
                for_ms,
            } => {
                let arrow = if *one_way { "→" } else { "⇹" };
                format!(
                    "partition {} {arrow} {} for {for_ms} ms",
                    from.join(", "),
                    to.join(", ")
                )
            }
            other => other.to_string(),
        }
    }

    /// The node a crash, restart, pause or resume acts on.
    pub fn node(&self) -> Option<&str> {
        match self {
            Happening::Crash { node, .. }
            | Happening::Restart(node)
            | Happening::Pause { node, .. }
            | Happening::Resume(node) => Some(node),
            _ => None,
        }
    }

    /// The text of a scenario's note.
    pub fn note(&self) -> Option<&str> {
        match self {
            Happening::Note(text) => Some(text),
            _ => None,
        }
    }

    /// The variant `text` looks like, not yet checked against its own text.
    fn structured(text: &str) -> Option<Happening> {
        match text {
            "partition healed" => return Some(Happening::PartitionHealed),
            "heal" => return Some(Happening::Heal),
            "end" => return Some(Happening::End),
            _ => {}
        }
        let ms = |s: &str| s.strip_suffix(" ms")?.parse::<u64>().ok();
        if let Some(rest) = text.strip_prefix("crash ") {
            let (node, down) = rest.split_once(" for ")?;
            return Some(Happening::Crash {
                node: node.to_string(),
                down_ms: ms(down)?,
            });
        }
        if let Some(rest) = text.strip_prefix("pause ") {
            let (node, down) = rest.split_once(" for ")?;
            return Some(Happening::Pause {
                node: node.to_string(),
                for_ms: ms(down)?,
            });
        }
        if let Some(node) = text.strip_prefix("restart ") {
            return Some(Happening::Restart(node.to_string()));
        }
        if let Some(node) = text.strip_prefix("resume ") {
            return Some(Happening::Resume(node.to_string()));
        }
        if let Some(rest) = text.strip_prefix("partition ") {
            let (one_way, sep) = if rest.contains("] -> [") {
                (true, " -> ")
            } else {
                (false, " <-> ")
            };
            let (from, tail) = rest.split_once(sep)?;
            let (to, dur) = tail.rsplit_once(" for ")?;
            let list = |s: &str| serde_json::from_str::<Vec<String>>(s).ok();
            return Some(Happening::Partition {
                from: list(from)?,
                to: list(to)?,
                one_way,
                for_ms: ms(dur)?,
            });
        }
        if let Some(rest) = text.strip_prefix("isolate ") {
            let (target, node) = rest.split_once(": ")?;
            return Some(Happening::Isolate {
                target: target.to_string(),
                node: (node != "names no node").then(|| node.to_string()),
            });
        }
        if let Some(rest) = text.strip_prefix("clock rate ") {
            if let Some(target) = rest.strip_suffix(": names no node") {
                return Some(Happening::ClockRateMissed(target.to_string()));
            }
            let (body, dur) = rest.rsplit_once(" for ")?;
            let (own, others) = body.split_once(" ppm")?;
            let (who, drift) = own.rsplit_once(' ')?;
            let (target, node) = who.split_once(": ").unwrap_or((who, who));
            let (peers, peers_ppm) = match others.strip_prefix(", ") {
                Some(o) => {
                    let (names, rate) = o.strip_suffix(" ppm")?.rsplit_once(' ')?;
                    let names = names.split(", ").map(str::to_string).collect();
                    (names, rate.parse().ok()?)
                }
                None if others.is_empty() => (Vec::new(), 0),
                None => return None,
            };
            return Some(Happening::ClockRate {
                target: target.to_string(),
                node: node.to_string(),
                drift_ppm: drift.parse().ok()?,
                peers,
                peers_ppm,
                for_ms: ms(dur)?,
            });
        }
        None
    }
}

impl Serialize for Happening {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Happening {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Happening, D::Error> {
        let text = String::deserialize(d)?;
        Ok(Happening::read(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_kind() -> Vec<Happening> {
        let s = |v: &str| v.to_string();
        vec![
            Happening::Crash {
                node: s("server-1"),
                down_ms: 300,
            },
            Happening::Restart(s("server-1")),
            Happening::Pause {
                node: s("client-0"),
                for_ms: 40,
            },
            Happening::Resume(s("client-0")),
            Happening::Partition {
                from: vec![s("server-0")],
                to: vec![s("client-1"), s("client-2")],
                one_way: false,
                for_ms: 900,
            },
            Happening::Partition {
                from: vec![s("a")],
                to: vec![s("b")],
                one_way: true,
                for_ms: 5,
            },
            Happening::PartitionHealed,
            Happening::Isolate {
                target: s("primary"),
                node: Some(s("server-2")),
            },
            Happening::Isolate {
                target: s("primary"),
                node: None,
            },
            Happening::ClockRate {
                target: s("server-0"),
                node: s("server-0"),
                drift_ppm: 500,
                peers: Vec::new(),
                peers_ppm: 0,
                for_ms: 1000,
            },
            Happening::ClockRate {
                target: s("holder"),
                node: s("host-1"),
                drift_ppm: -300,
                peers: vec![s("host-0"), s("host-2")],
                peers_ppm: 200,
                for_ms: 2500,
            },
            Happening::ClockRateMissed(s("holder")),
            Happening::Heal,
            Happening::End,
            Happening::Note(s("lost item k1 on server-0")),
        ]
    }

    #[test]
    fn each_happening_is_written_as_the_world_always_wrote_it() {
        let texts: Vec<String> = every_kind().iter().map(Happening::to_string).collect();
        assert_eq!(
            texts,
            [
                "crash server-1 for 300 ms",
                "restart server-1",
                "pause client-0 for 40 ms",
                "resume client-0",
                "partition [\"server-0\"] <-> [\"client-1\", \"client-2\"] for 900 ms",
                "partition [\"a\"] -> [\"b\"] for 5 ms",
                "partition healed",
                "isolate primary: server-2",
                "isolate primary: names no node",
                "clock rate server-0 +500 ppm for 1000 ms",
                "clock rate holder: host-1 -300 ppm, host-0, host-2 +200 ppm for 2500 ms",
                "clock rate holder: names no node",
                "heal",
                "end",
                "lost item k1 on server-0",
            ]
        );
    }

    #[test]
    fn a_person_reads_a_partition_s_groups_as_plain_lists() {
        let words: Vec<String> = every_kind().iter().map(Happening::words).collect();
        assert_eq!(
            words[4],
            "partition server-0 ⇹ client-1, client-2 for 900 ms"
        );
        assert_eq!(words[5], "partition a → b for 5 ms");
        for (h, w) in every_kind().iter().zip(&words) {
            assert!(!w.contains('"'), "{w}");
            if !matches!(h, Happening::Partition { .. }) {
                assert_eq!(*w, h.to_string());
            }
        }
    }

    #[test]
    fn each_happening_is_read_back_from_its_text_and_saved_as_it() {
        for h in every_kind() {
            assert_eq!(Happening::read(&h.to_string()), h, "{h}");
            let json = serde_json::to_string(&h).expect("serialises");
            assert_eq!(json, serde_json::to_string(&h.to_string()).expect("text"));
            let back: Happening = serde_json::from_str(&json).expect("deserialises");
            assert_eq!(back, h);
        }
    }

    #[test]
    fn a_line_no_variant_writes_exactly_is_a_note() {
        for text in [
            "crash server-1",
            "partition [\"a\" for 5 ms",
            "something else",
        ] {
            assert_eq!(Happening::read(text), Happening::Note(text.into()));
        }
    }
}

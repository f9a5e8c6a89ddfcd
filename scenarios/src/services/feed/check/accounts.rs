//! What a feed violation tells in words: why a change was never delivered
//! (CF3), and the accounts of a lease's pages, its owners and the final
//! leases that the failure page shows beside the lanes.

use super::*;

/// CF3 for item `k` version `version`, never delivered: why, in words (the
/// lease covering it at the end, its owner and checkpoint, and what last
/// happened to the owner), the span from its commit to the lease's next
/// page handed to a delegate (its commit alone when none came), and the
/// change's path as the focused account.
pub(super) fn missing(
    h: &FeedHistory,
    k: &Key,
    version: u64,
    lsn: u64,
    committed_ns: u64,
    final_leases: &[&LeaseDoc],
    end_ns: u64,
) -> Violation {
    let e = super::reference_epk(&k.0);
    let item = format!("{}/{}", k.0, k.1);
    let mut s = format!(
        "item {item} version {version} (lsn {lsn}, committed at {}",
        secs(committed_ns)
    );
    let mut rows = vec![EvidenceRow {
        op: None,
        cells: vec![
            secs(committed_ns),
            "server-0".into(),
            format!("committed {item} version {version} at lsn {lsn} (EPK {e:02X})"),
        ],
        marked: false,
    }];
    let lease = final_leases.iter().find(|d| d.min <= e && e < d.max);
    let mut lanes = vec!["server-0".to_string()];
    // The lease's first page handed to a delegate after the commit: the
    // change waited for it, and it did not carry the change to a delegate
    // that returned. The span ends there, not at the end of the run.
    let mut next_delivery: Option<(u64, String)> = None;
    match lease {
        None => {
            s.push_str(", no lease covers it at the end) was never delivered");
            rows.push(EvidenceRow {
                op: None,
                cells: vec![
                    secs(end_ns),
                    String::new(),
                    "no lease covers its EPK at the end".into(),
                ],
                marked: true,
            });
        }
        Some(d) => {
            let checkpoint = d
                .continuation
                .map_or_else(|| "none".to_string(), |c| format!("lsn {c}"));
            s.push_str(&format!(
                ", range [{:02X}-{:02X})) was never delivered; lease {} is owned by {} (checkpoint at {checkpoint})",
                d.min,
                d.max,
                d.token,
                d.owner.as_deref().unwrap_or("nobody"),
            ));
            let delivered: Vec<(u64, &str, u64)> = h
                .node_events
                .iter()
                .filter_map(|n| match &n.event {
                    FeedEvent::Host(ProcessorEvent::Delivered {
                        lease,
                        continuation,
                        ..
                    }) if *lease == d.token => Some((n.at_ns, n.node.as_str(), *continuation)),
                    _ => None,
                })
                .collect();
            next_delivery = delivered
                .iter()
                .find(|(at, ..)| *at >= committed_ns)
                .map(|(at, node, _)| (*at, processing(node)));
            for (at, node, up_to) in delivered
                .iter()
                .filter(|(at, ..)| *at >= committed_ns)
                .take(3)
            {
                rows.push(EvidenceRow {
                    op: None,
                    cells: vec![
                        secs(*at),
                        node.to_string(),
                        format!("delivered lease {}'s page up to lsn {up_to}", d.token),
                    ],
                    marked: false,
                });
            }
            if let Some(owner) = d.owner.as_deref() {
                lanes.push(processing(owner));
                let last_fault = h
                    .events
                    .iter()
                    .rev()
                    .find(|w| w.what.words().contains(owner) && w.at_ns <= end_ns);
                match last_fault {
                    Some(w) => {
                        s.push_str(&format!(
                            "; last fault of {owner} at {}: {}",
                            secs(w.at_ns),
                            w.what.words()
                        ));
                        rows.push(EvidenceRow {
                            op: None,
                            cells: vec![
                                secs(w.at_ns),
                                owner.to_string(),
                                format!("its last fault: {}", w.what.words()),
                            ],
                            marked: false,
                        });
                    }
                    None => s.push_str(&format!("; {owner} had no fault")),
                }
                if let Some((at, node, up_to)) = delivered.last() {
                    s.push_str(&format!(
                        "; the lease's last delivery was by {node} at {}",
                        secs(*at)
                    ));
                    if *at < committed_ns {
                        rows.push(EvidenceRow {
                            op: None,
                            cells: vec![
                                secs(*at),
                                node.to_string(),
                                format!("the lease's last delivery, up to lsn {up_to}, before the commit"),
                            ],
                            marked: false,
                        });
                    }
                }
            }
            rows.push(EvidenceRow {
                op: None,
                cells: vec![
                    secs(end_ns),
                    d.owner.clone().unwrap_or_else(|| "nobody".into()),
                    format!(
                        "the run ends: lease {} owned by {}, checkpoint at {checkpoint}; version {version} never delivered",
                        d.token,
                        d.owner.as_deref().unwrap_or("nobody")
                    ),
                ],
                marked: true,
            });
        }
    }
    rows.sort_by_key(|r| {
        r.cells[0]
            .trim_end_matches(" s")
            .parse::<f64>()
            .map_or(0, |x| (x * 1e6) as u64)
    });
    let mut v = violation("CF3", s);
    match next_delivery {
        // On the server's lane and the lane of the host that handed that
        // page to its delegate.
        Some((until, by)) => {
            for lane in [lanes[0].clone(), by] {
                v = v.during(
                    lane,
                    committed_ns,
                    until,
                    format!("{item} v{version} committed, until the lease's next page"),
                );
            }
        }
        None => {
            for lane in lanes {
                v = v.at(
                    lane,
                    committed_ns,
                    format!("{item} v{version} committed, never delivered"),
                );
            }
        }
    }
    v.with_evidence(Evidence {
        title: format!("The undelivered change: {item} version {version}"),
        lead: vec![format!(
            "Committed at lsn {lsn} at {}, it is the item's final version, and no delegate that returned ever got it.",
            secs(committed_ns)
        )],
        columns: ["when", "who", "what"].map(String::from).to_vec(),
        rows,
        notes: Vec::new(),
    })
}

/// A host's step with a lease's pages, in words (a delivery, its delegate's
/// return, a checkpoint, an acquisition), with the lease; `None` for others.
pub(super) fn page_step(e: &ProcessorEvent) -> Option<(u32, String)> {
    Some(match e {
        ProcessorEvent::Delivered {
            lease,
            items,
            continuation,
        } => (
            *lease,
            format!(
                "handed the page up to lsn {continuation} ({} item{}) to its delegate",
                items.len(),
                if items.len() == 1 { "" } else { "s" }
            ),
        ),
        ProcessorEvent::DelegateDone {
            lease,
            ok,
            continuation,
        } => (
            *lease,
            format!(
                "its delegate {} on the page up to lsn {continuation}",
                if *ok { "returned" } else { "threw" }
            ),
        ),
        ProcessorEvent::Checkpoint {
            lease,
            continuation,
            ok,
        } => (
            *lease,
            format!(
                "checkpointed at lsn {continuation} ({})",
                if *ok { "committed" } else { "rejected" }
            ),
        ),
        ProcessorEvent::Acquired { lease, .. } => (*lease, "acquired the lease".to_string()),
        _ => return None,
    })
}

/// What `node` did with lease `lease` around the step at `at_ns` that
/// `marked` names (the last five of its steps before it and two after), as
/// the focused account of a violation about that step (CF2, CF4, CF6).
pub(super) fn pages_account(
    node: &str,
    lease: u32,
    steps: &[(u64, u32, String)],
    at_ns: u64,
    marked: &dyn Fn(&str) -> bool,
    title: String,
    lead: String,
) -> Evidence {
    let of_lease: Vec<&(u64, u32, String)> = steps.iter().filter(|(_, l, _)| *l == lease).collect();
    let here = of_lease
        .iter()
        .position(|(t, _, w)| *t == at_ns && marked(w))
        .unwrap_or(0);
    let around = &of_lease[here.saturating_sub(5)..(here + 3).min(of_lease.len())];
    Evidence {
        title: format!("Lease {lease} on {node}: {title}"),
        lead: vec![lead],
        columns: ["when", "what"].map(String::from).to_vec(),
        rows: around
            .iter()
            .map(|(t, _, w)| EvidenceRow {
                op: None,
                cells: vec![secs(*t), w.clone()],
                marked: *t == at_ns && marked(w),
            })
            .collect(),
        notes: Vec::new(),
    }
}

/// Rows of a lease document's versions in the durable log (`lease`: its
/// token), the one logged at `marked_ns` marked.
pub(super) fn lease_rows<'a>(
    lease: u32,
    vs: impl IntoIterator<Item = &'a LeaseVersion>,
    marked_ns: u64,
) -> Vec<EvidenceRow> {
    vs.into_iter()
        .map(|x| EvidenceRow {
            op: None,
            cells: match &x.doc {
                Some(d) => vec![
                    secs(x.at_ns),
                    format!("lease {lease}"),
                    d.by.clone(),
                    d.owner.clone().unwrap_or_else(|| "nobody".to_string()),
                    lsn_words(d.continuation),
                ],
                None => vec![
                    secs(x.at_ns),
                    format!("lease {lease}"),
                    String::new(),
                    "deleted".to_string(),
                    String::new(),
                ],
            },
            marked: x.at_ns == marked_ns,
        })
        .collect()
}

/// The versions of lease documents as the focused account of a violation
/// about one of them (CF5, CF6, CF9).
pub(super) fn lease_account(title: String, lead: String, rows: Vec<EvidenceRow>) -> Evidence {
    Evidence {
        title,
        lead: vec![lead],
        columns: ["logged", "lease", "written by", "owner", "checkpoint"]
            .map(String::from)
            .to_vec(),
        rows,
        notes: Vec::new(),
    }
}

/// The lease documents at the end of the run, as the focused account of
/// CF7 and CF8: each lease's range, owner and checkpoint; the leases
/// `marked` says are wrong marked.
pub(super) fn final_account(
    final_leases: &[&LeaseDoc],
    lead: String,
    marked: &dyn Fn(&LeaseDoc) -> bool,
) -> Evidence {
    Evidence {
        title: "The leases at the end of the run".to_string(),
        lead: vec![lead],
        columns: ["lease", "range", "owner", "checkpoint"]
            .map(String::from)
            .to_vec(),
        rows: final_leases
            .iter()
            .map(|d| EvidenceRow {
                op: None,
                cells: vec![
                    format!("lease {}", d.token),
                    format!("{:02X}-{:02X}", d.min, d.max),
                    d.owner.clone().unwrap_or_else(|| "nobody".to_string()),
                    lsn_words(d.continuation),
                ],
                marked: marked(d),
            })
            .collect(),
        notes: Vec::new(),
    }
}

/// When lease `token` became what it is at the end: `(created, owned)`,
/// the first version of its last unbroken run of documents (since it was
/// last created) and the first of its last run with its final owner;
/// `None` when no lease ends the log with that token.
pub(super) fn final_since(
    leases: &BTreeMap<String, Vec<LeaseVersion>>,
    token: u32,
) -> Option<(u64, u64)> {
    let versions = leases.values().find(|vs| {
        vs.last()
            .and_then(|l| l.doc.as_ref())
            .is_some_and(|d| d.token == token)
    })?;
    let owner = versions.last()?.doc.as_ref()?.owner.clone();
    let since = |same: &dyn Fn(&LeaseDoc) -> bool| {
        versions
            .iter()
            .rev()
            .take_while(|v| v.doc.as_ref().is_some_and(same))
            .last()
            .map_or(0, |v| v.at_ns)
    };
    Some((since(&|_| true), since(&|d| d.owner == owner)))
}

/// A checkpoint in words: `lsn 41`, or `none`.
pub(super) fn lsn_words(c: Option<u64>) -> String {
    c.map_or_else(|| "none".to_string(), |c| format!("lsn {c}"))
}

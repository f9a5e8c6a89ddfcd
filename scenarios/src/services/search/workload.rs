//! The `search` workload. Every client first tries to create the story's
//! two resources (create-only, `If-None-Match: *`): the index `hotels` with
//! field `id` and the synonym map `synonyms`. Then it runs, by weight:
//!
//! - the seed's story (seed 000): GET a story resource, add an entry of its
//!   own, write it back with `CreateOrUpdate(definition, onlyIfUnchanged)`;
//!   on 412 re-GET and try again, on 409 wait and try again, at most
//!   `story_tries` tries (the seed's loop makes 3). With `onlyIfUnchanged`
//!   on, the second of two racing writers gets 412; with it off, an index
//!   answers 400 (a field would be dropped) and a synonym map silently
//!   loses the first writer's rule;
//! - GETs, create-only PUTs, conditional updates, blind PUTs and deletes of
//!   scratch resources.

use super::history::{Call, Outcome};
use super::SearchParams;
use crate::kit::dialects::recorded;
use crate::kit::dialects::StoreRole;
use crate::kit::draws::unit_stream;
use overcast_model::client::StoreClient;
use overcast_model::search::{ResourceKind, SearchRequest};
use overcast_model::search_client::{Definition, SearchClient};
use overcast_sim::history::Recorder;
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The seed's index.
pub const STORY_INDEX: &str = "hotels";
/// The story's synonym map.
pub const STORY_SYNONYMS: &str = "synonyms";

/// The kind of scratch resource `i`.
fn scratch_kind(i: usize) -> ResourceKind {
    if i.is_multiple_of(2) {
        ResourceKind::Index
    } else {
        ResourceKind::SynonymMap
    }
}

fn entries(e: &[&str]) -> BTreeSet<String> {
    e.iter().map(|x| x.to_string()).collect()
}

/// What a client sends and records.
struct Session<'a, 'b> {
    search: SearchClient<'a>,
    recorder: &'b Recorder<Call, Outcome>,
    client_id: usize,
    /// The last definition seen of each resource.
    seen: BTreeMap<String, Definition>,
}

impl Session<'_, '_> {
    async fn send(&mut self, req: &SearchRequest, added: Option<String>) -> Option<Outcome> {
        let call = Call::from_request(req, added);
        let name = req.name().to_string();
        let r = recorded(
            self.recorder,
            self.client_id,
            name.clone(),
            call,
            self.search.send(req),
            Outcome::from_result,
        )
        .await;
        let outcome = Outcome::from_result(&r);
        match (&outcome, r.response.as_ref()) {
            (
                Some(Outcome {
                    status: 200 | 201, ..
                }),
                Some(resp),
            ) => {
                if let Some(d) = Definition::from_response(&name, resp) {
                    self.seen.insert(name, d);
                }
            }
            (
                Some(Outcome {
                    status: 204 | 404, ..
                }),
                _,
            ) => {
                self.seen.remove(&name);
            }
            _ => {}
        }
        outcome
    }
}

/// One client's workload.
pub async fn client_workload(
    p: SearchParams,
    seed: u64,
    index: usize,
    client_id: usize,
    client: &mut StoreClient,
    recorder: Recorder<Call, Outcome>,
    deadline_ns: u64,
) {
    // Each operation draws from a stream of its own (see `kit::draws`).
    let mut ops = overcast_sim::rng::stream(seed, &format!("client-{index}-workload"));
    let mut s = Session {
        search: SearchClient::new(client),
        recorder: &recorder,
        client_id,
        seen: BTreeMap::new(),
    };
    for (name, kind, start) in [
        (STORY_INDEX, ResourceKind::Index, entries(&["id"])),
        (STORY_SYNONYMS, ResourceKind::SynonymMap, BTreeSet::new()),
    ] {
        let d = Definition {
            name: name.into(),
            kind,
            entries: start,
            etag: None,
        };
        let req = s.search.create_request(&d);
        s.send(&req, None).await;
    }
    let m = &p.mix;
    let weights = [m.story, m.get, m.create, m.update, m.blind_put, m.delete];
    let total: u32 = weights.iter().sum::<u32>().max(1);
    for n in 0..p.ops_per_client {
        if overcast_model::client::sim_now_ns() >= deadline_ns {
            break;
        }
        let mut rng = unit_stream(&mut ops);
        let mut pick = rng.gen_range(0..total);
        let mut kind = 0;
        while kind < weights.len() - 1 && pick >= weights[kind] {
            pick -= weights[kind];
            kind += 1;
        }
        let i = rng.gen_range(0..p.scratch_resources.max(1));
        let name = format!("scratch{i}");
        let scratch = |entries: BTreeSet<String>| Definition {
            name: name.clone(),
            kind: scratch_kind(i),
            entries,
            etag: None,
        };
        let pool: BTreeSet<String> = (0..3)
            .filter(|_| rng.gen_bool(0.5))
            .map(|f| format!("f{f}"))
            .collect();
        let req = match kind {
            0 => {
                let story = if rng.gen_bool(0.5) {
                    STORY_INDEX
                } else {
                    STORY_SYNONYMS
                };
                let entry = format!("c{index}.{n}");
                let node = overcast_harness::registry::client_incarnation(
                    StoreRole::Client,
                    client_id,
                    p.clients,
                );
                overcast_harness::ops::about(&node, n, story);
                if overcast_harness::ops::skipped(&node, n).await {
                    continue;
                }
                story_update(&mut s, story, &entry, &p, &mut rng).await;
                continue;
            }
            1 => s.search.get_request(&name),
            2 => s.search.create_request(&scratch(pool)),
            3 => match s.seen.get(&name) {
                Some(d) => {
                    let mut d = d.clone();
                    d.entries.extend(pool);
                    s.search.create_or_update_request(&d, true)
                }
                None => s.search.get_request(&name),
            },
            4 => s.search.create_or_update_request(&scratch(pool), false),
            _ => match s.seen.get(&name) {
                Some(d) => s.search.delete_request(d, rng.gen_bool(0.7)),
                None => s.search.delete_request(&scratch(BTreeSet::new()), false),
            },
        };
        let node =
            overcast_harness::registry::client_incarnation(StoreRole::Client, client_id, p.clients);
        overcast_harness::ops::about(&node, n, &name);
        if overcast_harness::ops::skipped(&node, n).await {
            continue;
        }
        s.send(&req, None).await;
    }
}

/// The seed's read–add–write loop on one story resource.
async fn story_update(
    s: &mut Session<'_, '_>,
    name: &str,
    entry: &str,
    p: &SearchParams,
    rng: &mut overcast_sim::rng::Stream,
) {
    for _ in 0..p.story_tries.max(1) {
        let get = s.search.get_request(name);
        match s.send(&get, None).await {
            Some(Outcome { status: 200, .. }) => {}
            _ => return,
        }
        let Some(mut d) = s.seen.get(name).cloned() else {
            return;
        };
        d.entries.insert(entry.to_string());
        let put = s.search.create_or_update_request(&d, p.only_if_unchanged);
        match s.send(&put, Some(entry.to_string())).await {
            Some(Outcome { status: 412, .. }) => continue,
            Some(Outcome { status: 409, .. }) => {
                let wait = rng.gen_range(1..=2 * overcast_model::search::UPDATE_MS);
                madsim::time::sleep(Duration::from_millis(wait)).await;
            }
            _ => return,
        }
    }
}

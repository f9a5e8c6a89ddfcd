//! Tests of `harness/src/goals.rs`.

use overcast_harness::goals::*;
use overcast_harness::registry::RunHistory;

fn goals() -> Vec<DynGoal> {
    vec![
        Goal::new("a", "A happened.", |_: &dyn RunHistory| 0),
        Goal::new("b", "B happened.", |_: &dyn RunHistory| 0),
        Goal::new("c", "C happened.", |_: &dyn RunHistory| 0),
    ]
}

fn tally(seeds: &[(u64, &[(GoalId, u64)])]) -> Tally {
    let mut t = Tally::new("toy", false, &goals());
    for (seed, reached) in seeds {
        t.add(*seed, reached);
    }
    t
}

const A: GoalId = GoalId::new("a");
const B: GoalId = GoalId::new("b");

#[test]
fn a_tally_counts_seeds_times_and_the_lowest_seeds() {
    let t = tally(&[
        (9, &[(A, 2)]),
        (3, &[(A, 1), (B, 4)]),
        (7, &[]),
        (1, &[(A, 1)]),
        (20, &[(A, 1)]),
        (11, &[(A, 3)]),
        (15, &[(A, 1)]),
    ]);
    assert_eq!(t.runs, 7);
    let a = &t.goals[0];
    assert_eq!((a.seeds, a.times), (6, 9));
    assert_eq!(a.first_seeds, [1, 3, 9, 11, 15]);
    let b = &t.goals[1];
    assert_eq!(
        (b.seeds, b.times, b.first_seeds.as_slice()),
        (1, 4, &[3][..])
    );
    let unreached: Vec<&str> = t.unreached().iter().map(|g| g.id.as_str()).collect();
    assert_eq!(unreached, ["c"]);
    let text = t.render();
    assert!(text.contains("2 of 3 reached over 7 seeds"), "{text}");
    assert!(text.contains("seeds 1, 3, 9, 11, 15, …"), "{text}");
    assert!(text.contains("never reached"), "{text}");
    assert!(text.contains("C happened."), "{text}");
}

#[test]
fn merging_shards_gives_the_tally_of_all_their_seeds() {
    let all: Vec<(u64, &[(GoalId, u64)])> = vec![
        (0, &[(A, 1)]),
        (1, &[(B, 2)]),
        (2, &[(A, 5), (B, 1)]),
        (3, &[]),
        (4, &[(A, 1)]),
    ];
    let whole = tally(&all);
    let even: Vec<_> = all.iter().filter(|(s, _)| s % 2 == 0).cloned().collect();
    let odd: Vec<_> = all.iter().filter(|(s, _)| s % 2 == 1).cloned().collect();
    let (mut f1, mut f2) = (GoalsFile::default(), GoalsFile::default());
    f1.add(&tally(&odd));
    f2.add(&tally(&even));
    f1.merge(&f2);
    assert_eq!(f1.tallies, [whole]);
    // Another scenario or swarm switch is a tally of its own.
    let mut swarm = tally(&odd);
    swarm.swarm = true;
    f1.add(&swarm);
    assert_eq!(f1.tallies.len(), 2);
}

#[test]
fn goals_files_are_written_read_and_summed_by_folder() {
    let dir = std::env::temp_dir().join(format!("overcast-goals-{}", std::process::id()));
    let (d1, d2, d3) = (dir.join("1"), dir.join("2"), dir.join("none"));
    for d in [&d1, &d2, &d3] {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut f1 = GoalsFile::default();
    f1.add(&tally(&[(0, &[(A, 1)])]));
    let mut f2 = GoalsFile::default();
    f2.add(&tally(&[(1, &[(A, 2), (B, 1)])]));
    assert_eq!(
        f1.write(&d1, &goals_file_name(None)).unwrap(),
        d1.join(GOALS_FILE)
    );
    f2.write(&d2, &goals_file_name(Some((2, 2)))).unwrap();
    assert_eq!(GoalsFile::read(&d1.join(GOALS_FILE)).unwrap(), f1);
    let sum = GoalsFile::read_dirs(&[d1, d2.clone(), d3.clone()])
        .unwrap()
        .unwrap();
    let a = &sum.tallies[0].goals[0];
    assert_eq!((sum.tallies[0].runs, a.seeds, a.times), (2, 2, 3));
    assert_eq!(a.first_seeds, [0, 1]);
    assert!(d2.join("goals-shard2-of-2.json").exists());
    assert_eq!(GoalsFile::read_dirs(&[d3]).unwrap(), None);
    std::fs::write(dir.join("1").join(GOALS_FILE), "{\"tallies\": 3}").unwrap();
    assert!(GoalsFile::read(&dir.join("1").join(GOALS_FILE)).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_erased_goal_counts_its_own_history_type_only() {
    type H = overcast_sim::history::History<u8, u8>;
    let g = erase(Goal::new("ops", "Any operation.", |h: &H| {
        h.ops.len() as u64
    }));
    let mut h = H {
        version: 1,
        ops: vec![],
        events: vec![],
        node_events: vec![],
        log_events: vec![],
    };
    h.ops.push(overcast_sim::history::OpRecord {
        id: 0,
        client: 0,
        key: "k".into(),
        call: 1,
        invoke_ns: 0,
        return_ns: Some(1),
        result: Some(2),
        attempts: vec![],
    });
    assert_eq!(g.count(&h), 1);
    let other = overcast_sim::history::History::<(), ()> {
        version: 1,
        ops: vec![],
        events: vec![],
        node_events: vec![],
        log_events: vec![],
    };
    assert_eq!(g.count(&other), 0);
}

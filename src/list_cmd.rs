//! `overcast list`: what the program knows, from the catalogue itself: the
//! scenarios (what each models, the properties it checks, its seeded bugs
//! and size limits), the seeded bugs, and the properties with what each
//! means and which scenarios judge it.

use overcast_scenarios::CATALOGUE;

/// Arguments of `overcast list`.
#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// What to list (default: the scenarios).
    #[command(subcommand)]
    pub what: Option<ListWhat>,
}

/// What `overcast list` lists.
#[derive(clap::Subcommand, Debug)]
pub enum ListWhat {
    /// The scenarios: what each models, the properties it checks, its
    /// seeded bugs and the largest sizes it takes (the default).
    #[command(after_help = "Example:\n  overcast list scenarios")]
    Scenarios,
    /// The seeded bugs: name, scenarios, the properties that catch it, what it does.
    #[command(after_help = "Example:\n  overcast list bugs leases")]
    Bugs {
        /// Only this scenario's bugs.
        scenario: Option<String>,
    },
    /// Every property: its id, what it means, the scenarios that judge it.
    #[command(after_help = "Example:\n  overcast list properties")]
    Properties,
}

/// Rows as columns: each cell but the last padded to its column's widest.
fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            if i + 1 == r.len() {
                line += cell;
            } else {
                line += &format!("{cell:<w$}  ", w = widths[i]);
            }
        }
        out += line.trim_end();
        out.push('\n');
    }
    out
}

fn scenarios() -> u8 {
    for def in CATALOGUE.scenarios {
        let checks: Vec<&str> = def.properties().iter().map(|p| p.id.as_str()).collect();
        println!("{}: {}", def.name(), def.describe());
        println!("  checks  {}", checks.join(", "));
        println!(
            "  bugs    {} (overcast list bugs {})",
            def.bugs().len(),
            def.name()
        );
        let limits: Vec<String> = def
            .limits()
            .iter()
            .map(|l| format!("{} {}", l.param, l.max))
            .collect();
        if !limits.is_empty() {
            println!("  at most {}", limits.join(", "));
        }
    }
    println!(
        "\nRun one with `overcast run SCENARIO --seed N`; `overcast list properties` says what each property means."
    );
    0
}

fn bugs(scenario: Option<&str>) -> u8 {
    let chosen = match scenario {
        None => CATALOGUE.bugs(),
        Some(name) => match CATALOGUE.find(name) {
            Ok(def) => def.bugs(),
            Err(e) => return crate::run_cmd::bad_input(e),
        },
    };
    let mut rows = vec![vec![
        "bug".to_string(),
        "scenarios".into(),
        "caught by".into(),
        "what it does".into(),
    ]];
    for b in chosen {
        rows.push(vec![
            b.name.to_string(),
            b.scenarios.join(", "),
            b.caught_by.join(", "),
            b.what.to_string(),
        ]);
    }
    print!("{}", table(&rows));
    0
}

fn properties() -> u8 {
    let every = CATALOGUE.scenarios.len();
    let mut rows = vec![vec![
        "property".to_string(),
        "judged by".into(),
        "meaning".into(),
    ]];
    for (p, names) in CATALOGUE.properties() {
        let by = if names.len() == every {
            "every scenario".to_string()
        } else {
            names.join(", ")
        };
        rows.push(vec![p.id.to_string(), by, p.meaning.to_string()]);
    }
    print!("{}", table(&rows));
    0
}

/// Runs the command; 0, or 2 for an unknown scenario.
pub fn run(args: &ListArgs) -> u8 {
    match &args.what {
        None | Some(ListWhat::Scenarios) => scenarios(),
        Some(ListWhat::Bugs { scenario }) => bugs(scenario.as_deref()),
        Some(ListWhat::Properties) => properties(),
    }
}

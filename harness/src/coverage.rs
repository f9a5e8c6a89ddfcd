//! A scenario's coverage of its SPEC tables: which row and cell each
//! operation of a run reached, summed over runs and printed as a table
//! (`overcast run NAME --coverage`, `overcast sweep NAME --coverage`). A
//! scenario that has tables says so in its definition
//! ([`crate::registry::ScenarioDef::coverage`]).

use crate::registry::DynScenario;
use crate::scenario::Scenario;
use std::collections::BTreeMap;

/// One row of a SPEC table: its id, what it says, and its cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// Short id (`W2.if_match`), stable for tests.
    pub id: &'static str,
    /// The SPEC table and row, in words.
    pub spec: &'static str,
    /// Why no run can reach the row, when that is by design (`None`: reachable).
    pub unreachable: Option<&'static str>,
    /// The row's cells (its columns and outcomes), each shown in the table
    /// even at zero; an answer outside them shows up as a cell of its own.
    pub cells: &'static [&'static str],
    /// Cells of a reachable row that no run can reach, each with why: shown,
    /// not counted, not asked of a sweep.
    pub unreachable_cells: &'static [(&'static str, &'static str)],
}

impl Row {
    /// A reachable row with these cells, none of them out of reach.
    pub const fn new(id: &'static str, spec: &'static str, cells: &'static [&'static str]) -> Row {
        Row {
            id,
            spec,
            unreachable: None,
            cells,
            unreachable_cells: &[],
        }
    }

    /// Why no run can reach `cell` of this row, if it is out of reach by design.
    pub fn unreachable_cell(&self, cell: &str) -> Option<&'static str> {
        self.unreachable_cells
            .iter()
            .find(|(c, _)| *c == cell)
            .map(|(_, why)| *why)
    }
}

/// The tables a scenario's coverage counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tables {
    /// The table's first line: which SPEC tables, and what is counted.
    pub title: &'static str,
    /// The rows, in SPEC order.
    pub rows: &'static [Row],
    /// What the operations with no row are, in words.
    pub unplaced: &'static str,
}

/// Counts per (row id, cell) of one scenario's tables, and what could not be placed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coverage {
    /// The tables counted.
    pub tables: Tables,
    /// Operations per row id and cell.
    pub cells: BTreeMap<(&'static str, String), u64>,
    /// Operations with no row ([`Tables::unplaced`] says which).
    pub unplaced: u64,
}

impl Coverage {
    /// Nothing counted yet.
    pub fn new(tables: Tables) -> Coverage {
        Coverage {
            tables,
            cells: BTreeMap::new(),
            unplaced: 0,
        }
    }

    /// Counts one operation in `cell` of row `row`.
    pub fn count(&mut self, row: &'static str, cell: impl Into<String>) {
        *self.cells.entry((row, cell.into())).or_default() += 1;
    }

    /// Adds another coverage's counts.
    pub fn merge(&mut self, other: &Coverage) {
        for (k, n) in &other.cells {
            *self.cells.entry(k.clone()).or_default() += n;
        }
        self.unplaced += other.unplaced;
    }

    /// Operations that exercised row `id`.
    pub fn row_count(&self, id: &str) -> u64 {
        self.cells
            .iter()
            .filter(|((r, _), _)| *r == id)
            .map(|(_, n)| n)
            .sum()
    }

    /// Operations counted in `cell` of row `id`.
    pub fn cell_count(&self, id: &'static str, cell: &str) -> u64 {
        self.cells
            .get(&(id, cell.to_string()))
            .copied()
            .unwrap_or(0)
    }

    /// The reachable cells of reachable rows no operation reached.
    pub fn cells_at_zero(&self) -> Vec<(&'static str, &'static str)> {
        self.tables
            .rows
            .iter()
            .filter(|r| r.unreachable.is_none())
            .flat_map(|r| {
                r.cells
                    .iter()
                    .filter(|c| r.unreachable_cell(c).is_none())
                    .map(move |c| (r.id, *c))
            })
            .filter(|(id, c)| self.cell_count(id, c) == 0)
            .collect()
    }

    /// The reachable rows no operation exercised.
    pub fn rows_at_zero(&self) -> Vec<&'static str> {
        self.tables
            .rows
            .iter()
            .filter(|r| r.unreachable.is_none() && self.row_count(r.id) == 0)
            .map(|r| r.id)
            .collect()
    }

    /// The table: one line per row (its count and the SPEC's words), then
    /// one indented line per cell (`-` and why for a cell out of reach).
    pub fn table(&self) -> String {
        let mut out = format!("{}\n", self.tables.title);
        for r in self.tables.rows {
            let n = self.row_count(r.id);
            match r.unreachable {
                Some(why) => out += &format!("{:<26} {:>8}  {}  [{why}]\n", r.id, "-", r.spec),
                None => out += &format!("{:<26} {:>8}  {}\n", r.id, n, r.spec),
            }
            for cell in r.cells {
                match r.unreachable_cell(cell) {
                    Some(why) if self.cell_count(r.id, cell) == 0 => {
                        out += &format!("    {:<22} {:>8}  {cell}  [{why}]\n", "", "-")
                    }
                    _ => {
                        out += &format!(
                            "    {:<22} {:>8}  {cell}\n",
                            "",
                            self.cell_count(r.id, cell)
                        )
                    }
                }
            }
            // Answers outside the row's cells (other statuses, or a cell the
            // history cannot decide).
            for ((_, cell), n) in self
                .cells
                .iter()
                .filter(|((id, cell), _)| *id == r.id && !r.cells.contains(&cell.as_str()))
            {
                out += &format!("    {:<22} {:>8}  {cell}\n", "", n);
            }
        }
        out += &format!(
            "{:<26} {:>8}  {}\n",
            "unplaced", self.unplaced, self.tables.unplaced
        );
        let zero = self.rows_at_zero();
        if !zero.is_empty() {
            out += &format!("rows at zero: {}\n", zero.join(", "));
        }
        let cells: Vec<String> = self
            .cells_at_zero()
            .into_iter()
            .filter(|(id, _)| !zero.contains(id))
            .map(|(id, c)| format!("{id} ({c})"))
            .collect();
        if !cells.is_empty() {
            out += &format!("cells at zero: {}\n", cells.join(", "));
        }
        out
    }
}

/// The coverage of `def`'s runs `make(seed)` over `seeds`, `jobs` at a
/// time, and each seed whose run did not pass, with its first problem;
/// `None` if `def` has no coverage tables.
pub fn over_seeds(
    def: &'static dyn DynScenario,
    seeds: &[u64],
    jobs: usize,
    make: impl Fn(u64) -> Scenario + Sync,
) -> Option<(Coverage, Vec<(u64, String)>)> {
    let tables = def.coverage_tables()?;
    let opts = overcast_sim::runner::SweepOptions {
        jobs: jobs.max(1),
        progress: false,
        stop_after_failures: None,
    };
    let results = overcast_sim::runner::sweep(
        seeds,
        &opts,
        |seed| {
            let r = crate::run::run_with(def, &make(seed));
            let problem = (!r.passed()).then(|| r.first_problem().unwrap_or_default());
            (def.coverage_of(&*r.history), problem)
        },
        |(_, problem)| problem.is_some(),
    );
    let mut total = Coverage::new(tables);
    let mut failed = Vec::new();
    for (seed, r) in results {
        match r {
            Ok((c, problem)) => {
                if let Some(c) = c {
                    total.merge(&c);
                }
                if let Some(p) = problem {
                    failed.push((seed, p));
                }
            }
            Err(e) => failed.push((seed, format!("panic: {e}"))),
        }
    }
    Some((total, failed))
}

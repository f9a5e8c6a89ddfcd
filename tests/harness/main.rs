//! Integration tests of the harness: the toy scenario, the generic layer on every service, the saved regressions, the bug hunt, fault budgets, branched runs and the explorer, failure pages, coverage, the architecture's rules and the size of source files (one binary, one link).

mod architecture;
mod budget;
mod bugs;
mod coverage;
mod draw_stability;
mod explore;
mod file_size;
mod goals;
mod harness_on_services;
mod regressions;
mod report;
mod toy_scenario;
mod units;

//! The arrows point one way: `overcast -> scenarios -> {sim, model}`,
//! `sim -> lin`; `model` never depends on `sim`, nor `sim` on `model`; `lin`
//! (the linearizability checker) depends on no other overcast crate and not
//! on madsim.

use std::process::Command;

#[test]
fn model_and_sim_do_not_know_each_other() {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let deps_of = |name: &str| -> Vec<String> {
        let pkg = meta["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name} is a member"));
        pkg["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap().to_string())
            .collect()
    };
    let model = deps_of("overcast-model");
    let sim = deps_of("overcast-sim");
    let lin = deps_of("overcast-lin");
    let scenarios = deps_of("overcast-scenarios");
    assert!(
        !model.iter().any(|d| d.starts_with("overcast")),
        "model depends on {model:?}"
    );
    assert!(
        !sim.iter()
            .any(|d| d.starts_with("overcast") && d != "overcast-lin"),
        "sim depends on {sim:?}"
    );
    assert!(
        !lin.iter()
            .any(|d| d.starts_with("overcast") || d.starts_with("madsim")),
        "lin depends on {lin:?}"
    );
    assert!(
        scenarios.contains(&"overcast-model".to_string())
            && scenarios.contains(&"overcast-sim".to_string())
    );
}

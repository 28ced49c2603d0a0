//! `deploy/kubernetes/`: valid YAML with everything the Jobs need, checked without a cluster.
//! The container's arguments are expanded as Kubernetes would (`$(VAR)` from the container's
//! env) and parsed by the harness's own command line, for every completion index.

use std::path::{Path, PathBuf};

use clap::Parser;
use serde_json::Value;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/kubernetes")
}

fn manifest(name: &str) -> Value {
    let path = dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{name}: not valid YAML: {e}"))
}

fn s<'a>(v: &'a Value, what: &str) -> &'a str {
    v.as_str()
        .unwrap_or_else(|| panic!("{what}: expected a string, got {v}"))
}

/// `$(NAME)` replaced from `env`, as the kubelet does for `command` and `args`.
fn expand(arg: &str, env: &[(String, String)]) -> String {
    let mut out = arg.to_owned();
    for (k, v) in env {
        out = out.replace(&format!("$({k})"), v);
    }
    assert!(!out.contains("$("), "unexpanded variable in {arg}: {out}");
    out
}

fn env_value<'a>(container: &'a Value, name: &str) -> &'a Value {
    container["env"]
        .as_array()
        .expect("the container has env")
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no env {name}"))
}

fn mount<'a>(pod: &'a Value, container: &Value, volume: &str) -> (&'a Value, String) {
    let m = container["volumeMounts"]
        .as_array()
        .expect("volume mounts")
        .iter()
        .find(|m| m["name"] == volume)
        .unwrap_or_else(|| panic!("volume {volume} is not mounted"));
    let v = pod["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v["name"] == volume)
        .unwrap_or_else(|| panic!("no volume {volume}"));
    (v, s(&m["mountPath"], "mountPath").to_owned())
}

#[test]
fn shard_job_runs_every_shard_of_one_schedule() {
    let job = manifest("job.yaml");
    let cm = manifest("configmap.yaml");
    let pvc = manifest("pvc.yaml");
    assert_eq!(job["apiVersion"], "batch/v1");
    assert_eq!(job["kind"], "Job");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["backoffLimit"], 0, "a retried shard would be late");
    let n = spec["completions"].as_u64().expect("completions");
    assert!(n >= 1);
    assert_eq!(spec["parallelism"].as_u64(), Some(n), "all shards at once");
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let containers = pod["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    assert_eq!(
        s(&env_value(c, "SHARDS")["value"], "SHARDS")
            .parse::<u64>()
            .ok(),
        Some(n),
        "SHARDS = completions"
    );
    assert_eq!(
        env_value(c, "JOB_COMPLETION_INDEX")["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
    assert_eq!(env_value(c, "START_AT")["value"], "__START_AT__");

    // The profile comes from the ConfigMap, results go to the claim.
    let (profile_vol, profile_dir) = mount(pod, c, "profile");
    assert_eq!(profile_vol["configMap"]["name"], cm["metadata"]["name"]);
    let (results_vol, results_dir) = mount(pod, c, "results");
    assert_eq!(
        results_vol["persistentVolumeClaim"]["claimName"],
        pvc["metadata"]["name"]
    );
    assert_eq!(pvc["kind"], "PersistentVolumeClaim");
    assert_eq!(pvc["spec"]["accessModes"][0], "ReadWriteMany");

    // Every index is a valid `harness run` of its own shard, on one start instant.
    let start = "2030-01-01T00:00:00Z";
    let mut outs = Vec::new();
    for i in 0..n {
        let mut env: Vec<(String, String)> = c["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| {
                Some((
                    s(&e["name"], "name").to_owned(),
                    e["value"].as_str()?.to_owned(),
                ))
            })
            .collect();
        env.push(("JOB_COMPLETION_INDEX".into(), i.to_string()));
        for (k, v) in env.iter_mut() {
            *v = v.replace("__START_AT__", start);
            if k == "BROKER" {
                // A Service name resolves only in the cluster: check its form, parse an IP.
                let (host, port) = v.rsplit_once(':').expect("BROKER is HOST:PORT");
                assert!(
                    !host.is_empty() && port.parse::<u16>().is_ok(),
                    "BROKER {v}"
                );
                *v = format!("127.0.0.1:{port}");
            }
        }
        let argv: Vec<String> = c["command"]
            .as_array()
            .unwrap()
            .iter()
            .chain(c["args"].as_array().unwrap())
            .map(|a| expand(s(a, "argument"), &env))
            .collect();
        let cli = harness::Cli::try_parse_from(&argv)
            .unwrap_or_else(|e| panic!("index {i}: {argv:?}: {e}"));
        let harness::Command::Run(run) = cli.command else {
            panic!("index {i}: not `harness run`: {argv:?}");
        };
        let spread = harness::runner::shard::spread_from_cli(
            run.shard.as_deref(),
            run.start_at.as_deref(),
            run.start_skew.into(),
        )
        .unwrap_or_else(|e| panic!("index {i}: {e:#}"));
        assert_eq!(spread.shard.index as u64, i);
        assert_eq!(spread.shard.count as u64, n);
        assert!(spread.start_at.is_some(), "a shared --start-at");
        assert!(run.target.is_some(), "shards drive one existing broker");
        let key = run
            .profile
            .strip_prefix(&profile_dir)
            .unwrap_or_else(|_| panic!("{} is not in {profile_dir}", run.profile.display()));
        assert!(
            cm["data"][key.to_str().unwrap()].is_string(),
            "no key {} in the ConfigMap",
            key.display()
        );
        let out = run.out.expect("--out");
        assert!(
            out.starts_with(&results_dir),
            "{} outside the volume",
            out.display()
        );
        outs.push(out);
    }
    outs.sort();
    outs.dedup();
    assert_eq!(outs.len() as u64, n, "one folder per shard");
}

#[test]
fn configmap_profile_is_valid_for_a_sharded_run() {
    let cm = manifest("configmap.yaml");
    assert_eq!(cm["kind"], "ConfigMap");
    let data = cm["data"].as_object().expect("data");
    assert!(!data.is_empty());
    let tmp = tempfile::tempdir().unwrap();
    for (key, text) in data {
        let path = tmp.path().join(key);
        std::fs::write(&path, s(text, key)).unwrap();
        let p = harness_model::profile::Profile::load(&path, &[])
            .unwrap_or_else(|e| panic!("configmap.yaml {key}: {e:#}"));
        assert!(
            p.broker.is_empty() && p.broker_axes().is_empty(),
            "{key}: --target ignores [broker] keys and refuses broker axes"
        );
        let cells = harness_model::matrix::expand(&p).unwrap();
        harness::runner::shard::check_cells(
            &harness_model::shard::Spread {
                shard: harness_model::shard::Shard { index: 0, count: 3 },
                start_at: None,
            },
            &cells,
        )
        .unwrap_or_else(|e| panic!("{key}: {e:#}"));
    }
}

#[test]
fn merge_job_reads_where_the_shards_write() {
    let job = manifest("job.yaml");
    let merge = manifest("merge-job.yaml");
    assert_eq!(merge["kind"], "Job");
    let shard_pod = &job["spec"]["template"]["spec"];
    let pod = &merge["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let c = &pod["containers"][0];
    let (vol, dir) = mount(pod, c, "results");
    let (shard_vol, shard_dir) = mount(shard_pod, &shard_pod["containers"][0], "results");
    assert_eq!(
        vol["persistentVolumeClaim"]["claimName"],
        shard_vol["persistentVolumeClaim"]["claimName"]
    );
    assert_eq!(dir, shard_dir);
    assert_eq!(env_value(c, "START_AT")["value"], "__START_AT__");
    let script: String = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| s(a, "arg").to_owned())
        .collect();
    assert!(script.starts_with("harness merge "), "{script}");
    // The shards' --out is /results/$(START_AT)/shard-$(JOB_COMPLETION_INDEX).
    let shard_out = shard_pod["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .skip_while(|a| *a != "--out")
        .nth(1)
        .map(|a| s(a, "--out").to_owned())
        .expect("--out");
    let shard_glob = shard_out
        .replace("$(START_AT)", "\"$START_AT\"")
        .replace("$(JOB_COMPLETION_INDEX)", "*");
    assert!(
        script.contains(&shard_glob),
        "{script} does not read {shard_glob}"
    );
    assert!(script.contains("--out"), "{script}");
}

//! Help for a new user: a bare `replica-lb` (or a bare command group) prints its commands, and
//! every command's `--help` ends with examples.

mod common;

/// The commands a help text lists under `Commands:` (but `help` itself).
fn commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

#[test]
fn a_bare_command_prints_its_commands() {
    let (code, out, err) = common::run(&[]);
    assert_eq!(code, 2, "clap's convention for a missing command");
    let text = format!("{out}{err}");
    let listed = commands(&text);
    for c in ["sim", "demo", "tournament", "experiment", "bench", "hwlb", "cluster", "policies"] {
        assert!(listed.iter().any(|l| l == c), "{c} not listed: {text}");
    }
    for group in ["sim", "hwlb", "cluster"] {
        let (code, out, err) = common::run(&[group]);
        assert_eq!(code, 2, "{group}");
        assert!(!commands(&format!("{out}{err}")).is_empty(), "{group}: {out}{err}");
    }
}

#[test]
fn every_help_ends_with_examples() {
    let mut paths: Vec<Vec<String>> = vec![vec![]];
    let mut seen = 0;
    while let Some(path) = paths.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let (code, out, _) = common::run(&args);
        assert_eq!(code, 0, "{args:?}");
        let lines: Vec<&str> = out.trim_end().lines().collect();
        let tail = &lines[lines.len().saturating_sub(4)..];
        let examples = lines.iter().rposition(|l| *l == "Examples:");
        assert!(
            examples.is_some_and(|i| i + 3 >= lines.len()) && tail.iter().any(|l| l.trim_start().starts_with("replica-lb ")),
            "{args:?} --help does not end with examples:\n{out}"
        );
        seen += 1;
        for c in commands(&out) {
            let mut next = path.clone();
            next.push(c);
            paths.push(next);
        }
    }
    assert!(seen >= 20, "{seen} help texts");
}

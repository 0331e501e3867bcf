//! The project README's driver example is the crate README's (which the doc tests compile).

#[test]
fn the_project_readme_shows_the_compiled_example() {
    let crate_readme = include_str!("../README.md");
    let project_readme = include_str!("../../../README.md");
    // The first rust block after `heading`, without its fence line.
    let code = |text: &str, heading: &str| -> String {
        let from = text.find(heading).expect("the heading");
        let fence = from + text[from..].find("```rust").expect("a rust example");
        let start = fence + text[fence..].find('\n').expect("a fence line") + 1;
        let end = start + text[start..].find("```").expect("a closed example");
        text[start..end].to_string()
    };
    assert_eq!(
        code(project_readme, "### Use a policy in your application (scylla Rust driver)"),
        code(crate_readme, "# replica-lb-driver"),
        "the README's example must be crates/driver/README.md's"
    );
}

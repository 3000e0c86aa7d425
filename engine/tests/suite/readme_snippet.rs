//! The README's library snippet is `examples/hello.rs` below its `//!`
//! header: the file is built and run as an example (tests/examples.rs) and
//! compiled as a doctest of the crate docs; this checks that the README
//! shows it as it is, so the snippet a reader copies is code that builds.

/// `hello.rs` without its leading `//!` header and the blank line after it.
fn hello_body() -> String {
    let src = include_str!("../../examples/hello.rs");
    src.lines()
        .skip_while(|l| l.starts_with("//!"))
        .skip_while(|l| l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn the_readme_shows_the_hello_example_as_it_is() {
    let readme = include_str!("../../../README.md");
    let body = hello_body();
    assert!(
        body.contains("fn main()"),
        "hello.rs lost its body:\n{body}"
    );
    let block = format!("```rust\n{body}```\n");
    assert!(
        readme.contains(&block),
        "README.md's library snippet is not engine/examples/hello.rs below its //! header; \
         paste this into the README's ```rust block:\n{body}"
    );
}

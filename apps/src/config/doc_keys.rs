//! The contract between the schema and `docs/configs.md`: every key
//! `--print-config` can print (every field of [`Config`], optional ones
//! included) has a row in its section's table of the doc, so a key added
//! without a doc line fails this test.

use super::Config;

const DOC: &str = include_str!("../../../docs/configs.md");

/// Every `section.key` of the config. JSON rather than TOML: TOML omits
/// the optional keys that are unset by default (`transport.credits`, ...),
/// JSON writes them as null.
fn dotted_keys() -> Vec<(String, String)> {
    let v = serde_json::to_value(Config::default()).expect("the config serializes");
    let mut keys = Vec::new();
    for (section, table) in v.as_object().expect("sections") {
        for key in table.as_object().expect("a section is a table").keys() {
            keys.push((section.clone(), key.clone()));
        }
    }
    keys
}

/// The first cells of the table rows under `### \`[section]\``.
fn documented(section: &str) -> Vec<&'static str> {
    let heading = format!("### `[{section}]`");
    let Some(start) = DOC.find(&heading) else {
        return Vec::new();
    };
    DOC[start + heading.len()..]
        .lines()
        .take_while(|l| !l.starts_with("## ") && !l.starts_with("### "))
        .filter_map(|l| l.strip_prefix('|'))
        .filter_map(|row| row.split('|').next())
        .collect()
}

#[test]
fn docs_configs_md_has_a_row_for_every_key() {
    let keys = dotted_keys();
    // The walk sees at least what --print-config prints.
    let printed: toml::Table = Config::default().to_toml_string().parse().unwrap();
    for (section, table) in &printed {
        for key in table.as_table().expect("a section").keys() {
            assert!(
                keys.contains(&(section.clone(), key.clone())),
                "{section}.{key}"
            );
        }
    }
    let missing: Vec<String> = keys
        .iter()
        .filter(|(section, key)| {
            let cell = format!("`{key}`");
            !documented(section).iter().any(|c| c.contains(&cell))
        })
        .map(|(s, k)| format!("{s}.{k}"))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/configs.md has no row for {missing:?} (add one to the section's table)"
    );
}

#[test]
fn the_doc_cites_the_config_folder() {
    assert!(
        !DOC.contains("apps/src/config.rs"),
        "the config is a folder now"
    );
    assert!(DOC.contains("apps/src/config/"));
}

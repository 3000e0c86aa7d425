//! `--print-config`: the effective configuration as TOML, every key with
//! where its value came from (`# default`, `# file`, `# flag`, or
//! `# derived: how` / `# measured: what` for what resolution set). The
//! output is itself a valid config: comments aside, it resolves to the
//! same settings.

use super::schema::Config;
use engine::config::Resolved;

impl Config {
    /// The TOML of this config with `r`'s values in place, each line
    /// labelled with its source.
    pub fn print_resolved(&self, r: &Resolved) -> String {
        let c = self.with_resolved(r);
        let text = c.to_toml_string();
        let mut out = String::new();
        let mut section = String::new();
        for line in text.lines() {
            let trimmed = line.trim();
            if let Some(name) = trimmed.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = name.to_string();
                out.push_str(line);
                out.push('\n');
                continue;
            }
            let Some((k, _)) = trimmed.split_once(" = ").filter(|_| !section.is_empty()) else {
                out.push_str(line);
                out.push('\n');
                continue;
            };
            let key = format!("{section}.{k}");
            let label = match r.settings.iter().find(|s| s.key == key) {
                Some(s) if !s.why.is_empty() => format!("{}: {}", s.source.as_str(), s.why),
                Some(s) => s.source.as_str().to_string(),
                None => c.source_of(&key).as_str().to_string(),
            };
            out.push_str(&format!("{line}  # {label}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::config::testutil::with;
    use crate::config::Config;

    #[test]
    fn every_key_says_where_its_value_came_from() {
        let c = with(&["transport.mode=lossy", "link.mtu=1400"]).unwrap();
        let r = c.resolved().unwrap();
        let text = c.print_resolved(&r);
        let line = |k: &str| {
            text.lines()
                .find(|l| l.starts_with(&format!("{k} = ")))
                .unwrap_or_else(|| panic!("{k} missing:\n{text}"))
                .to_string()
        };
        assert!(line("mode").ends_with("# flag"), "{}", line("mode"));
        assert!(line("mtu").ends_with("# flag"));
        assert!(line("rto_us").ends_with("# default"));
        let credits = line("credits");
        assert!(
            credits.starts_with("credits = 36  # derived: lossy: 4 x BDP"),
            "{credits}"
        );
        // Comments aside, it is a config that resolves the same.
        let back = Config::from_toml_str(&text).unwrap();
        assert_eq!(back.resolved().unwrap().transport, r.transport);
    }
}

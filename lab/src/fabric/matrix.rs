//! Connection matrices in uet-htsim's format (the `.cm` and `.tm` files of
//! its `htsim/sim/datacenter/connection_matrices/`, read by
//! `ConnectionMatrix::load(istream&)` in `connection_matrix.cpp`), so that
//! `--scenario matrix --matrix FILE` runs the very flows of uet-htsim's
//! validation suite. Only the parser is here; `scenario.rs` turns a
//! [`ConnectionMatrix`] into a workload.
//!
//! What is read (all the three validation files use): blank lines,
//! `#` comments, the header `Nodes N` and `Connections C`, and one
//! connection per line, `SRC->DST [id I] start T size S`, tokens separated
//! by single spaces or tabs. `T` is in microseconds: uet-htsim's
//! `main_uec.cpp` starts a flow at `timeFromUs((uint32_t)crt->start)`, so a
//! fractional start is truncated to the microsecond here too. What is
//! refused, with the file and line: triggers (`Triggers`, `trigger`,
//! `send_done_trigger`, `recv_done_trigger`), `Failures`/`failure`,
//! messages (`msg`) and priorities (`prio`), which the lab has no model
//! of; any other token; a node outside `0..N`; a connection from a node to
//! itself; a count of connections other than `Connections` says.

use super::topology::Topology;
use std::path::Path;

/// One line `SRC->DST ... start T size S`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Connection {
    /// Sending node.
    pub src: usize,
    /// Receiving node.
    pub dst: usize,
    /// Start, whole microseconds from time zero.
    pub start_us: u64,
    /// Bytes to move (at least 1).
    pub size: u64,
    /// The line it came from (1-based), for errors about it later.
    pub line: usize,
}

/// A parsed connection matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionMatrix {
    /// The `Nodes` header: nodes are `0..nodes`.
    pub nodes: usize,
    /// The connections, in file order.
    pub connections: Vec<Connection>,
}

/// The most nodes a matrix may declare (the fabric's address limit).
const MAX_NODES: usize = 65_535;
/// The largest flow accepted (uet-htsim reads sizes with `stoi`, so its own
/// files stay below 2^31; 1 TiB is the lab's flow-size limit).
const MAX_SIZE: u64 = 1 << 40;

/// Reads and parses the matrix at `path`; every error names the file.
pub fn read(path: &Path) -> Result<ConnectionMatrix, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("matrix {}: cannot read: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("matrix {}: {e}", path.display()))
}

/// Parses a whole matrix; an error names the line.
pub fn parse(text: &str) -> Result<ConnectionMatrix, String> {
    let mut nodes: Option<usize> = None;
    let mut declared: Option<usize> = None;
    let mut connections = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let tokens: Vec<&str> = raw.split_whitespace().collect();
        let Some(&first) = tokens.first() else {
            continue;
        };
        if first.starts_with('#') {
            continue;
        }
        let at = |msg: String| format!("line {line}: {msg}");
        match first {
            "Nodes" => {
                let n = header_value(&tokens).map_err(at)?;
                if !(2..=MAX_NODES).contains(&n) {
                    return Err(at(format!("Nodes must be 2..={MAX_NODES}, got {n}")));
                }
                if !connections.is_empty() {
                    return Err(at("`Nodes` after the first connection".into()));
                }
                nodes = Some(n);
            }
            "Connections" => declared = Some(header_value(&tokens).map_err(at)?),
            "Triggers" | "Failures" | "trigger" | "failure" => {
                return Err(at(format!(
                    "`{first}` is not supported (the lab runs connections with a start time only)"
                )));
            }
            _ if first.contains("->") => {
                let Some(n) = nodes else {
                    return Err(at("a connection before the `Nodes N` header".into()));
                };
                connections.push(connection(&tokens, n, line).map_err(at)?);
            }
            _ => return Err(at(format!("unknown line starting `{first}`"))),
        }
    }
    let Some(nodes) = nodes else {
        return Err("no `Nodes N` header".into());
    };
    if connections.is_empty() {
        return Err("no connections".into());
    }
    if let Some(c) = declared {
        if c != connections.len() {
            return Err(format!(
                "`Connections {c}` but {} connection lines",
                connections.len()
            ));
        }
    }
    Ok(ConnectionMatrix { nodes, connections })
}

/// The number after a header word (`Nodes 16`).
fn header_value(tokens: &[&str]) -> Result<usize, String> {
    match tokens {
        [word, n] => n
            .parse()
            .map_err(|_| format!("`{word}` wants a whole number, got `{n}`")),
        [word, ..] => Err(format!("`{word}` wants one number")),
        [] => Err("empty header".into()),
    }
}

/// One connection line, its nodes checked against `0..nodes`.
fn connection(tokens: &[&str], nodes: usize, line: usize) -> Result<Connection, String> {
    let (src, dst) = tokens[0]
        .split_once("->")
        .ok_or_else(|| format!("`{}` is not SRC->DST", tokens[0]))?;
    let node = |s: &str| -> Result<usize, String> {
        let n: usize = s
            .parse()
            .map_err(|_| format!("node `{s}` is not a whole number"))?;
        if n >= nodes {
            return Err(format!(
                "node {n} is outside the topology (Nodes {nodes}: nodes 0..={})",
                nodes - 1
            ));
        }
        Ok(n)
    };
    let (src, dst) = (node(src)?, node(dst)?);
    if src == dst {
        return Err(format!("connection from node {src} to itself"));
    }
    let mut start: Option<f64> = None;
    let mut size: Option<u64> = None;
    let mut rest = tokens[1..].iter();
    while let Some(&key) = rest.next() {
        let mut value = || {
            rest.next()
                .copied()
                .ok_or_else(|| format!("`{key}` without a value"))
        };
        match key {
            "start" => {
                let v = value()?;
                let t: f64 = v
                    .parse()
                    .map_err(|_| format!("start `{v}` is not a number of microseconds"))?;
                if !(t.is_finite() && (0.0..=1e9).contains(&t)) {
                    return Err(format!("start {v} us outside 0..=1e9"));
                }
                start = Some(t);
            }
            "size" => {
                let v = value()?;
                let s: u64 = v
                    .parse()
                    .map_err(|_| format!("size `{v}` is not a whole number of bytes"))?;
                if !(1..=MAX_SIZE).contains(&s) {
                    return Err(format!("size must be 1..={MAX_SIZE} bytes, got {s}"));
                }
                size = Some(s);
            }
            // uet-htsim's flow id names the flow in its output; the lab
            // numbers flows itself, so the id is checked and not kept.
            "id" => {
                let v = value()?;
                match v.parse::<u64>() {
                    Ok(id) if id > 0 => {}
                    _ => return Err(format!("id `{v}` is not a whole number above 0")),
                }
            }
            "trigger" | "send_done_trigger" | "recv_done_trigger" | "msg" | "prio" => {
                return Err(format!(
                    "`{key}` is not supported (the lab runs connections with a start time only)"
                ));
            }
            other => return Err(format!("unknown token `{other}`")),
        }
    }
    let start = start.ok_or("no `start T`")?;
    let size = size.ok_or("no `size S`")?;
    Ok(Connection {
        src,
        dst,
        // Truncated as uet-htsim truncates it (see the module's note).
        start_us: start as u64,
        size,
        line,
    })
}

/// The fabric a matrix of `nodes` hosts runs on: uet-htsim's default, a
/// 3-tier fat tree of radix K with K^3/4 hosts (`FatTreeTopologyCfg::
/// set_params` in `fat_tree_topology.cpp`; 16, 128 and 1,024 hosts are K =
/// 4, 8, 16), unless `--topology` says otherwise. Other sizes get a
/// leaf-spine of 16 hosts per leaf and 16 spines (one leaf if fewer
/// hosts).
pub fn topology(nodes: usize) -> Topology {
    if let Some(k) = (2..=64usize).step_by(2).find(|k| k * k * k / 4 == nodes) {
        return Topology::FatTree { k };
    }
    let per_leaf = if nodes.is_multiple_of(16) { 16 } else { nodes };
    Topology::LeafSpine {
        leaves: nodes / per_leaf,
        hosts_per_leaf: per_leaf,
        spines: per_leaf,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_formats_of_the_validation_suite() {
        // The shapes of one.cm, incast_1024_100K.cm (ids) and
        // incast_3-1_overlapped.tm (later starts), with a comment, a blank
        // line and a tab.
        let m = parse(
            "# comment\nNodes 128\nConnections 3\n\n127->0 id 1 start 0 size 2000000\n\
             95->0 id 2 start 40.9 size 250000\n61->0\tstart 40 size 250000\n",
        )
        .unwrap();
        assert_eq!(m.nodes, 128);
        assert_eq!(
            m.connections,
            vec![
                Connection {
                    src: 127,
                    dst: 0,
                    start_us: 0,
                    size: 2_000_000,
                    line: 5
                },
                Connection {
                    src: 95,
                    dst: 0,
                    start_us: 40,
                    size: 250_000,
                    line: 6
                },
                Connection {
                    src: 61,
                    dst: 0,
                    start_us: 40,
                    size: 250_000,
                    line: 7
                },
            ]
        );
    }

    #[test]
    fn bad_matrices_name_the_line_and_what_is_wrong() {
        let cases: [(&str, &[&str]); 14] = [
            (
                "Nodes 16\n0->16 start 0 size 1\n",
                &["line 2", "node 16", "outside"],
            ),
            ("Nodes 16\n99->1 start 0 size 1\n", &["line 2", "node 99"]),
            ("0->1 start 0 size 1\n", &["line 1", "Nodes"]),
            ("Nodes 16\n3->3 start 0 size 1\n", &["line 2", "itself"]),
            ("Nodes 16\n0->1 size 1\n", &["line 2", "start"]),
            ("Nodes 16\n0->1 start 0\n", &["line 2", "size"]),
            ("Nodes 16\n0->1 start 0 size 0\n", &["line 2", "size"]),
            ("Nodes 16\n0->1 start x size 1\n", &["line 2", "start `x`"]),
            (
                "Nodes 16\n0->1 start 0 size 1 prio 3\n",
                &["line 2", "prio", "not supported"],
            ),
            ("Nodes 16\n0->1 id 1 trigger 2\n", &["line 2", "trigger"]),
            ("Nodes 16\nTriggers 1\n", &["line 2", "Triggers"]),
            (
                "Nodes 16\n0->1 start 0 size 1 colour red\n",
                &["line 2", "colour"],
            ),
            (
                "Nodes 16\nConnections 2\n0->1 start 0 size 1\n",
                &["Connections 2", "1 connection"],
            ),
            ("Nodes many\n", &["line 1", "many"]),
        ];
        for (text, wants) in cases {
            let e = parse(text).expect_err(text);
            for w in wants {
                assert!(e.contains(w), "{text:?}: {e:?} lacks {w:?}");
            }
        }
        assert!(parse("Nodes 16\n").unwrap_err().contains("no connections"));
        assert!(parse("").unwrap_err().contains("Nodes"));
    }

    #[test]
    fn a_missing_file_is_an_error_naming_it() {
        let e = read(Path::new("/nonexistent/x.cm")).unwrap_err();
        assert!(
            e.contains("/nonexistent/x.cm") && e.contains("cannot read"),
            "{e}"
        );
    }
}

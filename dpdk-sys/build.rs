//! Finds the system DPDK with pkg-config, generates bindings for an explicit
//! allowlist with bindgen, and compiles the C shim with the same flags.
//! Any missing prerequisite stops the build with one message that names the
//! install script.

use std::env;
use std::path::PathBuf;

const INSTALL_HINT: &str = "run ./scripts/install-deps.sh (installs libdpdk-dev >= 22.11, pkg-config, clang, libclang-dev)";

fn fail(what: &str) -> ! {
    // A panic in a build script prints its message; keep it to one clear line.
    panic!("\n\ndpdk-sys: {what}\n  -> {INSTALL_HINT}\n\n");
}

fn pkg_config(args: &[&str]) -> String {
    let out = std::process::Command::new("pkg-config")
        .args(args)
        .output()
        .unwrap_or_else(|_| fail("pkg-config is not installed"));
    if !out.status.success() {
        fail(&format!(
            "pkg-config {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn main() {
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=shim.h");
    println!("cargo:rerun-if-changed=shim.c");
    println!("cargo:rerun-if-changed=shim_intr.h");
    println!("cargo:rerun-if-changed=shim_intr.c");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");

    let version = pkg_config(&["--modversion", "libdpdk"]);
    if std::process::Command::new("pkg-config")
        .args(["--atleast-version=22.11", "libdpdk"])
        .status()
        .map(|s| !s.success())
        .unwrap_or(true)
    {
        fail(&format!("DPDK {version} found, but >= 22.11 is required"));
    }
    // The version this crate was built against, for self-describing reports.
    println!("cargo:rustc-env=RPC_DPDK_VERSION={version}");

    // All cflags, not just include paths: they carry `-include rte_config.h`
    // and `-march=...`, without which DPDK headers do not compile.
    let cflags: Vec<String> = pkg_config(&["--cflags", "libdpdk"])
        .split_whitespace()
        .map(str::to_string)
        .collect();

    let mut build = cc::Build::new();
    build
        .file("shim.c")
        .file("shim_intr.c")
        .opt_level(3)
        .warnings(false);
    for flag in &cflags {
        build.flag(flag);
    }
    build.compile("rpc_dpdk_shim");

    // Shared DPDK build: link only the libraries we call. EAL loads the PMDs
    // (memif, af_packet, ...) itself at init; linking them by hand would break that.
    for lib in [
        "rte_eal",
        "rte_mempool",
        "rte_mbuf",
        "rte_ethdev",
        "rte_kvargs",
        "rte_ring",
        // rte_eth_from_rings (the in-process crossover wire). This is the
        // same file EAL would load from its PMD directory; the loader maps
        // it once either way, so the driver registers once.
        "rte_net_ring",
    ] {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }

    clang_sys_available();

    let bindings = bindgen::Builder::default()
        .header("wrapper.h")
        .clang_args(cflags.iter())
        .allowlist_function("rte_eal_init|rte_eal_cleanup|rte_dev_probe|rte_strerror|rte_log_set_global_level|rte_log_set_level_pattern|rte_log_get_level|rte_log_register")
        .allowlist_function("rte_ring_create|rte_ring_free|rte_eth_from_rings")
        .allowlist_function("rte_eal_remote_launch|rte_eal_wait_lcore|rte_thread_register|rte_thread_unregister")
        .allowlist_function("rte_lcore_count|rte_get_main_lcore|rte_lcore_is_enabled|rte_lcore_to_cpu_id|rte_socket_id")
        .allowlist_function("rte_pktmbuf_pool_create|rte_mempool_free|rte_mempool_avail_count|rte_mempool_in_use_count|rte_pktmbuf_free_bulk")
        .allowlist_function("rte_eth_dev_count_avail|rte_eth_dev_get_port_by_name|rte_eth_dev_get_name_by_port|rte_eth_dev_is_valid_port")
        .allowlist_function("rte_eth_dev_configure|rte_eth_rx_queue_setup|rte_eth_tx_queue_setup|rte_eth_dev_start|rte_eth_dev_stop|rte_eth_dev_close")
        .allowlist_function("rte_eth_dev_info_get|rte_eth_macaddr_get|rte_eth_link_get_nowait|rte_eth_dev_set_mtu|rte_eth_dev_get_mtu")
        .allowlist_function("rte_eth_promiscuous_enable|rte_eth_stats_get|rte_eth_stats_reset|rte_eth_dev_socket_id")
        .allowlist_function("rte_flow_validate|rte_flow_create|rte_flow_destroy|rte_flow_flush")
        .allowlist_function("rte_eth_dev_rss_reta_update|rte_eth_dev_rss_reta_query")
        .allowlist_function("shim_.*")
        .allowlist_type("rte_mbuf|rte_mempool|rte_eth_conf|rte_eth_dev_info|rte_eth_link|rte_eth_stats|rte_ether_addr|rte_flow_attr|rte_flow_item|rte_flow_action|rte_flow_action_queue|rte_flow_error|rte_flow_item_type|rte_flow_action_type|rte_eth_rss_reta_entry64")
        .allowlist_var("RTE_MAX_LCORE|RTE_MAX_ETHPORTS|RTE_PKTMBUF_HEADROOM|RTE_MBUF_DEFAULT_BUF_SIZE|RTE_ETH_LINK_UP|RTE_LOG_.*|SOCKET_ID_ANY|RTE_ETH_MQ_RX_.*|RTE_ETH_MQ_TX_.*|RING_F_SP_ENQ|RING_F_SC_DEQ")
        .opaque_type("rte_mempool")
        .opaque_type("rte_ring")
        .default_enum_style(bindgen::EnumVariation::Consts)
        .derive_default(true)
        .derive_debug(false)
        .layout_tests(false)
        .generate_comments(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .generate()
        .unwrap_or_else(|e| fail(&format!("bindgen could not generate DPDK bindings: {e}")));

    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindings
        .write_to_file(out.join("bindings.rs"))
        .unwrap_or_else(|e| fail(&format!("cannot write bindings: {e}")));
}

/// bindgen loads libclang at run time and panics with a long message if it is
/// missing; probe first so the user sees the install hint instead.
fn clang_sys_available() {
    let found = [
        "/usr/lib/llvm-16/lib",
        "/usr/lib/llvm-15/lib",
        "/usr/lib/llvm-14/lib",
        "/usr/lib/x86_64-linux-gnu",
    ]
    .iter()
    .any(|dir| {
        std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten().any(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.starts_with("libclang") && n.contains(".so") && !n.contains("cpp")
                })
            })
            .unwrap_or(false)
    }) || env::var_os("LIBCLANG_PATH").is_some();
    if !found {
        fail("libclang was not found (bindgen needs it)");
    }
}

//! A node on its own: `replica-lb-node --config FILE`. The same as `replica-lb node`; used by
//! the integration tests, which cannot spawn the CLI binary of another crate.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = match args.as_slice() {
        [_, flag, path] if flag == "--config" => path.clone(),
        _ => {
            eprintln!("replica-lb-node: usage: replica-lb-node --config FILE");
            std::process::exit(2);
        }
    };
    let result = replica_lb_node::NodeConfig::from_file(std::path::Path::new(&path)).and_then(replica_lb_node::server::run_blocking);
    if let Err(e) = result {
        eprintln!("replica-lb-node: {e}");
        std::process::exit(if e.is_usage() { 2 } else { 1 });
    }
}

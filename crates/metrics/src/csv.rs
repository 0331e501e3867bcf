//! `timeseries.csv`: one row per second per node, then one row per second for the whole
//! cluster (`node` = `all`, counters summed, latency filled). The header is a contract.

use crate::series::Series;
use std::io::Write;

/// The exact header line.
pub const HEADER: &str = "t_s,node,reads,cache_hits,cache_misses,hit_ratio,local_reads,remote_reads,replica_reads,disk_queue,p50_ms,p99_ms,nic_out_bytes,nic_in_bytes,internode_out_bytes";

/// The whole CSV as text.
pub fn timeseries_csv(series: &Series) -> String {
    let mut out = Vec::with_capacity(64 * (series.nodes + 1) * series.seconds as usize + 128);
    // Writing into a Vec cannot fail.
    let _ = write_timeseries_csv(&mut out, series);
    String::from_utf8(out).expect("the CSV is ASCII")
}

/// Writes the CSV to `w` a row at a time (a long run of a large cluster is gigabytes of text:
/// it is never held whole in memory). Give it a buffered writer.
pub fn write_timeseries_csv(w: &mut impl Write, series: &Series) -> std::io::Result<()> {
    writeln!(w, "{HEADER}")?;
    for t in 0..series.seconds {
        for n in 0..series.nodes {
            let r = series.node(t, n);
            writeln!(
                w,
                "{t},{n},{},{},{},{:.4},{},{},{},{},,,{},{},{}",
                r.reads,
                r.cache_hits,
                r.cache_misses,
                r.hit_ratio(),
                r.local_reads,
                r.remote_reads,
                r.replica_reads,
                r.disk_queue,
                r.nic_out_bytes,
                r.nic_in_bytes,
                r.internode_out_bytes
            )?;
        }
        let a = series.all(t);
        let c = series.cluster.get(t as usize).copied().unwrap_or_default();
        writeln!(
            w,
            "{t},all,{},{},{},{:.4},{},{},{},{},{:.3},{:.3},{},{},{}",
            a.reads,
            a.cache_hits,
            a.cache_misses,
            a.hit_ratio(),
            a.local_reads,
            a.remote_reads,
            a.replica_reads,
            a.disk_queue,
            c.p50_ms,
            c.p99_ms,
            a.nic_out_bytes,
            a.nic_in_bytes,
            a.internode_out_bytes
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::{CacheOutcome, ReadKind, Recorder, RecorderConfig};

    #[test]
    fn rows_per_second_per_node_and_all() {
        let mut r = Recorder::new(RecorderConfig {
            nodes: 2,
            duration_s: 2,
            phases: vec![],
            timeout_ns: 5_000_000_000,
        })
        .unwrap();
        r.read(0, 1, ReadKind::Replica, CacheOutcome::Hit);
        r.completed(5, 2_000_000);
        let m = r.finish("x".into(), None, 0, 0.0);
        let csv = timeseries_csv(&m.series);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], HEADER);
        assert_eq!(lines.len(), 1 + 2 * 3);
        assert_eq!(lines[2], "0,1,1,1,0,1.0000,0,0,1,0,,,0,0,0");
        assert_eq!(lines[3], "0,all,1,1,0,1.0000,0,0,1,0,2.000,2.000,0,0,0");
        assert!(lines.iter().all(|l| l.split(',').count() == 15));
    }
}

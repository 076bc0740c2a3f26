//! `gate --format json`: the shared envelope, written as the verdicts come.

use std::io::{self, Write};

use kvlower_codes::Finding;
use kvlower_trace::{CampaignSummary, ClaimVerdict, Control, GateResult, TraceFamily, TraceGate};
use serde::Serialize;

use crate::Exit;
use crate::output::{JsonDiagnostic, OUTPUT_SCHEMA_VERSION};

use super::{GateEmitter, tally};

/// Writes the shared envelope incrementally: the payload's results one per line as
/// they come, then the campaign counts, the tally as `summary`, the exit and the
/// diagnostics (keys in that order; a JSON reader does not depend on it).
pub(super) struct JsonEmitter<'a> {
    out: &'a mut dyn Write,
    rows: u64,
}

impl<'a> JsonEmitter<'a> {
    pub(super) fn new(out: &'a mut dyn Write) -> Self {
        JsonEmitter { out, rows: 0 }
    }
}

#[derive(Serialize)]
struct JsonRow<'a> {
    trace: &'a str,
    claim_id: Option<&'a str>,
    family: TraceFamily,
    gates: &'a std::collections::BTreeMap<TraceGate, GateResult>,
    controls_rejected: &'a [Control],
}

impl GateEmitter for JsonEmitter<'_> {
    fn begin(&mut self) -> io::Result<()> {
        write!(
            self.out,
            "{{\"schema_version\":{OUTPUT_SCHEMA_VERSION},\"command\":\"gate\",\"payload\":{{\"results\":["
        )
    }

    fn verdict(&mut self, trace: &str, v: &ClaimVerdict) -> io::Result<()> {
        let row = JsonRow {
            trace,
            claim_id: v.claim_id.as_deref(),
            family: v.family,
            gates: &v.gates,
            controls_rejected: &v.controls_rejected,
        };
        let sep = if self.rows == 0 { "\n" } else { ",\n" };
        self.out.write_all(sep.as_bytes())?;
        serde_json::to_writer(&mut *self.out, &row)?;
        self.rows += 1;
        Ok(())
    }

    fn end(
        &mut self,
        summary: &CampaignSummary,
        findings: &mut dyn Iterator<Item = Finding>,
        _count: usize,
        _traces: usize,
        exit: Exit,
    ) -> io::Result<()> {
        write!(self.out, "\n],\"campaign\":")?;
        serde_json::to_writer(&mut *self.out, summary)?;
        write!(self.out, "}},\"summary\":")?;
        serde_json::to_writer(&mut *self.out, &tally(summary))?;
        write!(
            self.out,
            ",\"ok\":{},\"exit_code\":{},\"diagnostics\":[",
            exit == Exit::Success,
            exit.as_u8()
        )?;
        for (i, d) in findings.enumerate() {
            let sep = if i == 0 { "\n" } else { ",\n" };
            self.out.write_all(sep.as_bytes())?;
            serde_json::to_writer(&mut *self.out, &JsonDiagnostic::from(&d))?;
        }
        writeln!(self.out, "\n],\"error\":null}}")
    }
}

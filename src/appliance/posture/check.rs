//! The shape of the posture report: one pass/fail [`Check`] per claim, and the [`Report`] that
//! counts them and prints one line each.

use serde::Serialize;

/// One check of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub pass: bool,
    pub detail: String,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub checks: Vec<Check>,
    pub passed: usize,
    pub failed: usize,
}

impl Report {
    pub(super) fn new(checks: Vec<Check>) -> Self {
        let passed = checks.iter().filter(|c| c.pass).count();
        let failed = checks.len() - passed;
        Report {
            checks,
            passed,
            failed,
        }
    }

    /// One `PASS name: detail` / `FAIL name: detail` line per check.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for c in &self.checks {
            let mark = if c.pass { "PASS" } else { "FAIL" };
            out.push_str(&format!("{mark} {}: {}\n", c.name, c.detail));
        }
        out.push_str(&format!("{} passed, {} failed\n", self.passed, self.failed));
        out
    }
}

/// A check named `name`.
pub(super) fn check(name: &'static str, pass: bool, detail: impl Into<String>) -> Check {
    Check {
        name,
        pass,
        detail: detail.into(),
    }
}

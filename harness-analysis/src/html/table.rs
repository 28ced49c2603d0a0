//! A CSV file as text cells, columns found by name: the report shows what the run wrote, digit
//! for digit, and a column it does not know (added by a later issue) is simply carried along.

use std::path::Path;

use super::error::ReportError;

/// A CSV file's header and rows, every cell as written.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn read(path: &Path) -> Result<Table, ReportError> {
        let bad = |e: csv::Error| ReportError::Csv {
            path: path.to_owned(),
            line: e.position().map_or(1, |p| p.line()),
            message: e.to_string(),
        };
        let mut r = csv::Reader::from_path(path).map_err(bad)?;
        let header = r
            .headers()
            .map_err(bad)?
            .iter()
            .map(str::to_owned)
            .collect();
        let mut rows = Vec::new();
        for rec in r.records() {
            rows.push(rec.map_err(bad)?.iter().map(str::to_owned).collect());
        }
        Ok(Table { header, rows })
    }

    pub fn col(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    pub fn has(&self, name: &str) -> bool {
        self.col(name).is_some()
    }

    /// The text of `name` in `row` ("" when the column is absent).
    pub fn text<'a>(&'a self, row: &'a [String], name: &str) -> &'a str {
        self.col(name)
            .and_then(|i| row.get(i))
            .map_or("", String::as_str)
    }

    /// The number in `name` of `row` (`true`/`false` as 1/0); None when empty or absent.
    pub fn num(&self, row: &[String], name: &str) -> Option<f64> {
        match self.text(row, name).trim() {
            "true" => Some(1.0),
            "false" => Some(0.0),
            t => t.parse::<f64>().ok().filter(|v| v.is_finite()),
        }
    }
}

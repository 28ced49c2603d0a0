//! How the CSV row structs become cells and column names. Column names are the serde field
//! names of the row structs, plus one `busy_<class>` column per [`BusyClass`], so a column is
//! named once; numbers keep the fixed decimals `compare` and the committed baselines expect.

use serde::{Serialize, Serializer};

use crate::busy::BusyClass;

/// A float written with exactly `D` decimals (`{:.D}`), never in exponent form.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Fixed<const D: usize>(pub f64);

impl<const D: usize> Serialize for Fixed<D> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:.*}", D, self.0))
    }
}

/// Milliseconds with three decimals from whole microseconds.
pub fn ms(us: u64) -> Fixed<3> {
    Fixed(us as f64 / 1000.0)
}

/// The serde field names of a flat struct, in declaration order (csv's own header inference).
///
/// The names are leaked: each table is built once per process and lives for all of it, and
/// `&'static str` lets callers test membership with a plain `&str`.
pub fn field_names<T: Serialize + Default>() -> Vec<&'static str> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.serialize(T::default())
        .expect("a flat struct of scalars always serializes");
    let bytes = w.into_inner().expect("writing to memory cannot fail");
    let text = String::from_utf8(bytes).expect("field names are UTF-8");
    let header = text.lines().next().unwrap_or_default();
    header
        .split(',')
        .map(|name| &*Box::leak(name.to_owned().into_boxed_str()))
        .collect()
}

/// `busy_<class>` for every busy class, in [`BusyClass::ALL`] order.
pub fn busy_columns() -> Vec<&'static str> {
    BusyClass::ALL
        .iter()
        .map(|c| &*Box::leak(format!("busy_{}", c.column()).into_boxed_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Default)]
    struct Two {
        a_b: u64,
        c: Option<Fixed<1>>,
    }

    #[test]
    fn fixed_keeps_decimals_and_names_come_from_fields() {
        let mut w = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(Vec::new());
        w.serialize((
            Fixed::<3>(1.0),
            Fixed::<1>(1234567.26),
            ms(1500),
            Fixed::<6>(0.0),
        ))
        .unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(text, "1.000,1234567.3,1.500,0.000000\n");
        assert_eq!(field_names::<Two>(), ["a_b", "c"]);
        assert_eq!(busy_columns()[0], "busy_pcbusy_clean_queue");
    }
}

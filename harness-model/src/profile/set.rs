//! `--set` overrides on a loaded profile, and the checks of matrix axes: an axis value is
//! validated as the section it would replace, per-broker keys against the cluster.

use super::ab::ab_settings_of;
use super::cluster::per_broker_key;
use super::consumer::{consumer_with, CONSUMER_KEYS};
use super::diagnostics::{did_you_mean, PerBrokerKeyError, ProfileError};
use super::document::{
    check_axis, knee_of, section_text, slo_of, Profile, SET_PREFIXES, SET_SECTIONS,
};
use super::fault::fault_with;
use super::value::{is_scalar, parse_set_value, value_string};
use super::workload::{workload_with, WORKLOAD_KEYS};

impl Profile {
    /// `workload.k=v` or `broker.k=v`; on an axis key the axis collapses to that one value.
    pub fn apply_set(&mut self, arg: &str) -> Result<(), ProfileError> {
        let set_err = |message: String| ProfileError::Set {
            arg: arg.to_owned(),
            message,
        };
        let (key, value) = arg.split_once('=').ok_or_else(|| {
            set_err(
                "expected key=value, e.g. workload.rate=5000 or broker.sendMessageThreadPoolNums=4"
                    .into(),
            )
        })?;
        let key = key.trim();
        let value = parse_set_value(value.trim());
        self.axes.retain(|a| a.key != key);
        if let Some(k) = key.strip_prefix("workload.") {
            if !WORKLOAD_KEYS.contains(&k) {
                let help = did_you_mean(k, WORKLOAD_KEYS).map_or(String::new(), |b| {
                    format!(" (did you mean `workload.{b}`?)")
                });
                return Err(set_err(format!("unknown workload key `{k}`{help}")));
            }
            self.workload = workload_with(&self.workload_table, k, &value)
                .map_err(|e| set_err(e.to_string()))?;
            self.workload_table.insert(k.to_owned(), value);
        } else if let Some(k) = key.strip_prefix("broker.") {
            if k.is_empty() || !is_scalar(&value) {
                return Err(set_err(
                    "a broker key needs a name and a scalar value".into(),
                ));
            }
            self.broker.insert(k.to_owned(), value_string(&value));
            self.broker_origins
                .insert(k.to_owned(), format!("--set {}", arg.trim()));
        } else if let Some(k) = key.strip_prefix("consumer.") {
            if !CONSUMER_KEYS.contains(&k) {
                let help = did_you_mean(k, CONSUMER_KEYS).map_or(String::new(), |b| {
                    format!(" (did you mean `consumer.{b}`?)")
                });
                return Err(set_err(format!("unknown consumer key `{k}`{help}")));
            }
            let table = self.consumer_table.get_or_insert_with(toml::Table::new);
            self.consumer =
                Some(consumer_with(table, k, &value).map_err(|e| set_err(e.to_string()))?);
            table.insert(k.to_owned(), value);
        } else if let Some(k) = key.strip_prefix("fault.") {
            self.fault =
                fault_with(&self.fault_table, k, &value).map_err(|e| set_err(e.to_string()))?;
            self.fault_table.insert(k.to_owned(), value);
        } else if let Some((section, k)) = key
            .split_once('.')
            .and_then(|(s, k)| SET_SECTIONS.iter().find(|&&n| n == s).map(|&n| (n, k)))
        {
            let mut table = self.section_tables[section].clone();
            table.insert(k.to_owned(), value);
            match section {
                "knee" => self.knee = knee_of(&table).map_err(|e| set_err(e.to_string()))?,
                "slo" => self.slo = Some(slo_of(&table).map_err(|e| set_err(e.to_string()))?),
                _ => {
                    self.ab = Some(
                        ab_settings_of(&section_text(section, &table))
                            .map_err(|e| set_err(e.to_string()))?,
                    )
                }
            }
            self.section_tables.insert(section, table);
        } else {
            let prefix = key.split_once('.').map_or(key, |(p, _)| p);
            let help = did_you_mean(prefix, SET_PREFIXES)
                .map_or(String::new(), |b| format!(" (did you mean `{b}.`?)"));
            return Err(set_err(format!(
                "the key must start with one of {}{help}",
                SET_PREFIXES
                    .iter()
                    .map(|p| format!("`{p}.`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if let Some(plan) = &self.fault {
            plan.check_workload(&self.workload)
                .map_err(|e| set_err(e.to_string()))?;
        }
        // Axis values were checked against the old base; check them again.
        for axis in &self.axes {
            check_axis(
                &axis.key,
                &axis.values,
                &self.workload_table,
                &self.broker,
                self.consumer_table.as_ref(),
                &self.fault_table,
                self.cluster.is_some(),
            )
            .map_err(|(m, _)| set_err(m))?;
        }
        Ok(())
    }

    /// `broker.<i>.<key>` needs `[cluster]` with more than `i` brokers.
    pub(super) fn check_per_broker_keys(&self) -> Result<(), PerBrokerKeyError> {
        let axis_keys = self
            .axes
            .iter()
            .filter_map(|a| a.key.strip_prefix("broker."));
        for key in self.broker.keys().map(String::as_str).chain(axis_keys) {
            let Some((i, _)) = per_broker_key(key) else {
                continue;
            };
            let brokers = self.cluster.as_ref().map_or(0, |c| c.brokers as usize);
            if i >= brokers {
                return Err(PerBrokerKeyError {
                    origin: self.broker_origins.get(key).cloned().unwrap_or_default(),
                    key: key.to_owned(),
                    broker: i,
                    brokers,
                });
            }
        }
        Ok(())
    }

    /// Whether any axis varies a broker key (an error with `--target`).
    pub fn broker_axes(&self) -> Vec<&str> {
        self.axes
            .iter()
            .filter(|a| a.key.starts_with("broker."))
            .map(|a| a.key.as_str())
            .collect()
    }
}

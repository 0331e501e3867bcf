//! Named policy parameters with published defaults and allowed ranges.
//!
//! Each policy declares its parameters as a static table of [`ParamSpec`]. A scenario file or a
//! node's configuration passes overrides as a name -> value table; [`Params::resolve`] checks
//! every override (unknown name, wrong type, out of range) and yields the effective values.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A parameter value as written in a scenario file or on a command line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    /// A whole number.
    Int(i64),
    /// A real number.
    Float(f64),
    /// A switch.
    Bool(bool),
    /// A word (for example a mode name).
    Text(String),
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Int(v) => write!(f, "{v}"),
            ParamValue::Float(v) => write!(f, "{v}"),
            ParamValue::Bool(v) => write!(f, "{v}"),
            ParamValue::Text(v) => write!(f, "'{v}'"),
        }
    }
}

impl ParamValue {
    fn kind(&self) -> &'static str {
        match self {
            ParamValue::Int(_) => "an integer",
            ParamValue::Float(_) => "a number",
            ParamValue::Bool(_) => "true or false",
            ParamValue::Text(_) => "a word",
        }
    }

    /// Parses a command-line text: integer, then float, then bool, else a word.
    pub fn parse_text(text: &str) -> ParamValue {
        if let Ok(v) = text.parse::<i64>() {
            ParamValue::Int(v)
        } else if let Ok(v) = text.parse::<f64>() {
            ParamValue::Float(v)
        } else if let Ok(v) = text.parse::<bool>() {
            ParamValue::Bool(v)
        } else {
            ParamValue::Text(text.to_string())
        }
    }
}

/// The declared shape of one parameter.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    /// The name used in scenario files, e.g. `tau_ms`.
    pub name: &'static str,
    /// The published default.
    pub default: ParamDefault,
    /// One line: what it controls.
    pub description: &'static str,
}

impl ParamSpec {
    /// A real-valued parameter with its default and allowed range (for the policies' static
    /// parameter tables).
    pub const fn float(name: &'static str, value: f64, min: f64, max: f64, description: &'static str) -> ParamSpec {
        ParamSpec {
            name,
            default: ParamDefault::Float { value, min, max },
            description,
        }
    }
}

/// A default value together with its type and allowed range.
#[derive(Clone, Copy, Debug)]
pub enum ParamDefault {
    /// A real number in `[min, max]`.
    Float {
        /// The default.
        value: f64,
        /// Smallest allowed.
        min: f64,
        /// Largest allowed.
        max: f64,
    },
    /// A whole number in `[min, max]`.
    Int {
        /// The default.
        value: i64,
        /// Smallest allowed.
        min: i64,
        /// Largest allowed.
        max: i64,
    },
    /// A switch.
    Bool(bool),
    /// One of a fixed list of words.
    Choice {
        /// The default.
        value: &'static str,
        /// Every allowed word.
        allowed: &'static [&'static str],
    },
}

impl ParamDefault {
    /// The default as a value.
    pub fn value(&self) -> ParamValue {
        match *self {
            ParamDefault::Float { value, .. } => ParamValue::Float(value),
            ParamDefault::Int { value, .. } => ParamValue::Int(value),
            ParamDefault::Bool(v) => ParamValue::Bool(v),
            ParamDefault::Choice { value, .. } => ParamValue::Text(value.to_string()),
        }
    }
}

/// A parameter table (name -> value), as scenario files and configs give overrides.
pub type ParamTable = BTreeMap<String, ParamValue>;

/// A policy could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The policy name is not known.
    #[error("unknown policy '{name}'; known policies: {known}")]
    UnknownPolicy {
        /// The name given.
        name: String,
        /// Comma-separated list of known names.
        known: String,
    },
    /// A parameter name is not one of the policy's.
    #[error("policy '{policy}' has no parameter '{param}'; its parameters: {known}")]
    UnknownParam {
        /// The policy.
        policy: String,
        /// The name given.
        param: String,
        /// Comma-separated list of its parameters.
        known: String,
    },
    /// A parameter value has the wrong type or is out of range.
    #[error("policy '{policy}' parameter '{param}' = {value}: {allowed}")]
    BadValue {
        /// The policy.
        policy: String,
        /// The parameter.
        param: String,
        /// The value given.
        value: String,
        /// What is allowed.
        allowed: String,
    },
    /// The policy cannot make the kind of decision asked of it.
    #[error("policy '{policy}' works on the {side} side and cannot be used as a {wanted}-side policy")]
    WrongSide {
        /// The policy.
        policy: String,
        /// The side it works on.
        side: &'static str,
        /// The side asked for.
        wanted: &'static str,
    },
}

/// Resolved parameter values of one policy: the defaults with the overrides applied.
#[derive(Clone, Debug)]
pub struct Params {
    policy: &'static str,
    values: BTreeMap<&'static str, ParamValue>,
}

impl Params {
    /// Checks `overrides` against `specs` and merges them over the defaults.
    pub fn resolve(policy: &'static str, specs: &'static [ParamSpec], overrides: &ParamTable) -> Result<Params, PolicyError> {
        let mut values: BTreeMap<&'static str, ParamValue> = specs.iter().map(|s| (s.name, s.default.value())).collect();
        for (name, given) in overrides {
            let Some(spec) = specs.iter().find(|s| s.name == name) else {
                return Err(PolicyError::UnknownParam {
                    policy: policy.to_string(),
                    param: name.clone(),
                    known: if specs.is_empty() {
                        "(none)".to_string()
                    } else {
                        specs.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
                    },
                });
            };
            values.insert(spec.name, check(policy, spec, given)?);
        }
        Ok(Params { policy, values })
    }

    /// A real-number parameter (integers are accepted and widened).
    pub fn f64(&self, name: &str) -> f64 {
        match self.get(name) {
            ParamValue::Float(v) => *v,
            ParamValue::Int(v) => *v as f64,
            other => panic!("parameter {name} of {} is {other}, not a number", self.policy),
        }
    }

    /// A whole-number parameter.
    pub fn i64(&self, name: &str) -> i64 {
        match self.get(name) {
            ParamValue::Int(v) => *v,
            other => panic!("parameter {name} of {} is {other}, not an integer", self.policy),
        }
    }

    /// A switch parameter.
    pub fn bool(&self, name: &str) -> bool {
        match self.get(name) {
            ParamValue::Bool(v) => *v,
            other => panic!("parameter {name} of {} is {other}, not a switch", self.policy),
        }
    }

    /// A word parameter.
    pub fn text(&self, name: &str) -> &str {
        match self.get(name) {
            ParamValue::Text(v) => v,
            other => panic!("parameter {name} of {} is {other}, not a word", self.policy),
        }
    }

    /// Every effective value, by name (for reports).
    pub fn values(&self) -> impl Iterator<Item = (&'static str, &ParamValue)> {
        self.values.iter().map(|(k, v)| (*k, v))
    }

    fn get(&self, name: &str) -> &ParamValue {
        // A missing name is a bug in the policy's own code (it reads a parameter it did not
        // declare), never bad user input: user input was checked in `resolve`.
        self.values
            .get(name)
            .unwrap_or_else(|| panic!("policy {} reads undeclared parameter {name}", self.policy))
    }
}

fn check(policy: &str, spec: &ParamSpec, given: &ParamValue) -> Result<ParamValue, PolicyError> {
    let bad = |allowed: String| PolicyError::BadValue {
        policy: policy.to_string(),
        param: spec.name.to_string(),
        value: given.to_string(),
        allowed,
    };
    match (spec.default, given) {
        (ParamDefault::Float { min, max, .. }, ParamValue::Float(_) | ParamValue::Int(_)) => {
            let v = match given {
                ParamValue::Float(v) => *v,
                ParamValue::Int(v) => *v as f64,
                _ => unreachable!(),
            };
            if v.is_finite() && v >= min && v <= max {
                Ok(ParamValue::Float(v))
            } else {
                Err(bad(format!("must be a number in [{min}, {max}]")))
            }
        }
        (ParamDefault::Int { min, max, .. }, ParamValue::Int(v)) => {
            if *v >= min && *v <= max {
                Ok(ParamValue::Int(*v))
            } else {
                Err(bad(format!("must be an integer in [{min}, {max}]")))
            }
        }
        (ParamDefault::Bool(_), ParamValue::Bool(v)) => Ok(ParamValue::Bool(*v)),
        (ParamDefault::Choice { allowed, .. }, ParamValue::Text(v)) => {
            if allowed.contains(&v.as_str()) {
                Ok(given.clone())
            } else {
                Err(bad(format!("must be one of: {}", allowed.join(", "))))
            }
        }
        (d, _) => Err(bad(format!("must be {}", d.value().kind()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static SPECS: [ParamSpec; 3] = [
        ParamSpec {
            name: "tau_ms",
            default: ParamDefault::Float {
                value: 10_000.0,
                min: 1.0,
                max: 1e9,
            },
            description: "decay",
        },
        ParamSpec {
            name: "choices",
            default: ParamDefault::Int { value: 2, min: 2, max: 64 },
            description: "how many",
        },
        ParamSpec {
            name: "mode",
            default: ParamDefault::Choice {
                value: "a",
                allowed: &["a", "b"],
            },
            description: "mode",
        },
    ];

    #[test]
    fn defaults_and_overrides() {
        let mut o = ParamTable::new();
        o.insert("choices".into(), ParamValue::Int(3));
        o.insert("tau_ms".into(), ParamValue::Int(5));
        let p = Params::resolve("x", &SPECS, &o).unwrap();
        assert_eq!(p.i64("choices"), 3);
        assert_eq!(p.f64("tau_ms"), 5.0);
        assert_eq!(p.text("mode"), "a");
    }

    #[test]
    fn bad_overrides_name_the_problem() {
        let mut o = ParamTable::new();
        o.insert("nope".into(), ParamValue::Int(3));
        let e = Params::resolve("x", &SPECS, &o).unwrap_err().to_string();
        assert!(e.contains("'nope'") && e.contains("tau_ms"), "{e}");

        let mut o = ParamTable::new();
        o.insert("choices".into(), ParamValue::Int(1));
        let e = Params::resolve("x", &SPECS, &o).unwrap_err().to_string();
        assert!(e.contains("choices") && e.contains("[2, 64]"), "{e}");

        let mut o = ParamTable::new();
        o.insert("choices".into(), ParamValue::Float(2.5));
        let e = Params::resolve("x", &SPECS, &o).unwrap_err().to_string();
        assert!(e.contains("an integer"), "{e}");

        let mut o = ParamTable::new();
        o.insert("mode".into(), ParamValue::Text("c".into()));
        let e = Params::resolve("x", &SPECS, &o).unwrap_err().to_string();
        assert!(e.contains("a, b"), "{e}");
    }
}

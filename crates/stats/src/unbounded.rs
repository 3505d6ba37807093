//! Serde for figures that may be infinite ("not reachable"): JSON has no infinity, so an infinite
//! value is written as null and read back as infinity, and the report regenerates byte for byte.

use serde::{Deserialize, Deserializer, Serializer};

pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() {
        s.serialize_f64(*v)
    } else {
        s.serialize_none()
    }
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

/// The same for a pair (an interval whose ends may be infinite).
pub mod pair {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(v: &(f64, f64), s: S) -> Result<S::Ok, S::Error> {
        let f = |x: f64| x.is_finite().then_some(x);
        (f(v.0), f(v.1)).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<(f64, f64), D::Error> {
        let (a, b) = <(Option<f64>, Option<f64>)>::deserialize(d)?;
        Ok((a.unwrap_or(f64::INFINITY), b.unwrap_or(f64::INFINITY)))
    }
}

/// The same for an optional pair (an interval that may be absent, whose ends may be infinite).
pub mod option_pair {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<(f64, f64)>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(p) => super::pair::serialize(p, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<(f64, f64)>, D::Error> {
        let p = <Option<(Option<f64>, Option<f64>)>>::deserialize(d)?;
        Ok(p.map(|(a, b)| (a.unwrap_or(f64::INFINITY), b.unwrap_or(f64::INFINITY))))
    }
}

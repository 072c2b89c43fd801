//! The stored form of the by-value stdlib instances (`datetime`, `date`, `time`, `timedelta`,
//! `timezone`, `UUID`, the `IsoCalendarDate` of `date.isocalendar()`) inside node, edge and object fields: a one-key tagged JSON object
//! holding the text a person reads (`{"__datetime__": "2024-05-06T07:08:09+02:00"}`), so
//! the value comes back as the same type after a round trip through the store.
//! Reading goes through the constructors, so a damaged row is checked like any argument.

use super::super::value::*;
use super::super::{Interp, Interrupt, R};
use serde_json::{Map, Value as J};

/// The tags, one per stored type.
const DATETIME: &str = "__datetime__";
const DATE: &str = "__date__";
const TIME: &str = "__time__";
const TIMEDELTA: &str = "__timedelta__";
const TIMEZONE: &str = "__timezone__";
const UUID: &str = "__uuid__";
const ISOCALENDAR: &str = "__isocalendar__";

/// `Some(int)` of an int field.
fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        _ => None,
    }
}

/// The `[days, seconds, microseconds]` of a `timedelta` instance.
fn td_parts(v: &Value) -> Option<J> {
    let Value::Instance(i) = v else { return None };
    let f = i.fields.borrow();
    let parts: Option<Vec<J>> = f.iter().map(|x| int(x).map(J::from)).collect();
    parts.filter(|p| p.len() == 3).map(J::Array)
}

/// The name a `timezone` was given (`timezone(off, "CET")`), if any.
fn tz_name(v: &Value) -> Option<String> {
    let Value::Instance(i) = v else { return None };
    match i.fields.borrow().get(1) {
        Some(Value::Str(s)) => Some(s.to_string()),
        _ => None,
    }
}

impl Interp<'_> {
    /// The stored JSON of `v` when it is a by-value stdlib instance; `None` for any
    /// other value (a pattern or match object is not one).
    pub(crate) fn stdlib_to_stored(&mut self, v: &Value) -> R<Option<J>> {
        let Some(key) = Self::stdlib_key(v).map(str::to_string) else {
            return Ok(None);
        };
        let Value::Instance(inst) = v else {
            return Ok(None);
        };
        let fields = inst.fields.borrow().clone();
        let mut m = Map::new();
        match key.as_str() {
            "datetime.datetime" => {
                let iso = self.datetime_method(&key, v, "isoformat", Vec::new(), Vec::new())?;
                m.insert(DATETIME.into(), J::String(self.to_str(&iso)?));
                if let Some(name) = fields.get(7).and_then(tz_name) {
                    m.insert("tzname".into(), J::String(name));
                }
                if let Some(fold) = fields.get(8).and_then(int).filter(|f| *f != 0) {
                    m.insert("fold".into(), J::from(fold));
                }
            }
            "datetime.time" => {
                let iso = self.datetime_method(&key, v, "isoformat", Vec::new(), Vec::new())?;
                m.insert(TIME.into(), J::String(self.to_str(&iso)?));
                if let Some(name) = fields.get(4).and_then(tz_name) {
                    m.insert("tzname".into(), J::String(name));
                }
                if let Some(fold) = fields.get(5).and_then(int).filter(|f| *f != 0) {
                    m.insert("fold".into(), J::from(fold));
                }
            }
            "datetime.date" => {
                let iso = self.datetime_method(&key, v, "isoformat", Vec::new(), Vec::new())?;
                m.insert(DATE.into(), J::String(self.to_str(&iso)?));
            }
            "datetime.timedelta" => {
                let Some(parts) = td_parts(v) else {
                    return Ok(None);
                };
                m.insert(TIMEDELTA.into(), parts);
            }
            "datetime.timezone" => {
                let Some(parts) = fields.first().and_then(td_parts) else {
                    return Ok(None);
                };
                m.insert(TIMEZONE.into(), parts);
                let name = tz_name(v).map_or(J::Null, J::String);
                m.insert("name".into(), name);
            }
            "uuid.UUID" => {
                let hex = fields.first().cloned().unwrap_or(Value::None);
                m.insert(UUID.into(), J::String(super::uuid::text(hex)));
            }
            "datetime.IsoCalendarDate" => {
                let parts: Option<Vec<J>> = fields.iter().map(|x| int(x).map(J::from)).collect();
                let Some(parts) = parts else {
                    return Ok(None);
                };
                m.insert(ISOCALENDAR.into(), J::Array(parts));
            }
            _ => return Ok(None),
        }
        Ok(Some(J::Object(m)))
    }

    /// The value of a stored object written by [`Self::stdlib_to_stored`]: `None` when
    /// `m` carries none of its tags, `Some(None)` (Python's None) when the row is
    /// damaged, as other unreadable stored values are.
    pub(crate) fn stdlib_from_stored(&mut self, m: &Map<String, J>) -> R<Option<Value>> {
        let made = if let Some(J::String(s)) = m.get(DATETIME) {
            self.stored_datetime(s, m)
        } else if let Some(J::String(s)) = m.get(TIME) {
            self.stored_time(s, m)
        } else if let Some(J::String(s)) = m.get(DATE) {
            self.call_datetime_fn("date.fromisoformat", vec![Value::str(s)], Vec::new())
        } else if let Some(parts) = m.get(TIMEDELTA) {
            self.stored_timedelta(parts)
        } else if let Some(parts) = m.get(TIMEZONE) {
            let off = self.stored_timedelta(parts);
            match (off, m.get("name")) {
                (Ok(off), Some(J::String(n))) => self.datetime_construct(
                    "datetime.timezone",
                    vec![off, Value::str(n)],
                    Vec::new(),
                ),
                (Ok(off), _) => self.datetime_construct("datetime.timezone", vec![off], Vec::new()),
                (Err(e), _) => Err(e),
            }
        } else if let Some(J::String(s)) = m.get(UUID) {
            self.uuid_construct(vec![Value::str(s)], Vec::new())
        } else if let Some(J::Array(parts)) = m.get(ISOCALENDAR) {
            let parts: Option<Vec<Value>> =
                parts.iter().map(|x| x.as_i64().map(Value::Int)).collect();
            match parts {
                Some(p) if p.len() == 3 => Ok(self.stdlib_instance("datetime.IsoCalendarDate", p)),
                _ => Ok(Value::None),
            }
        } else {
            return Ok(None);
        };
        match made {
            Ok(v) => Ok(Some(v)),
            Err(Interrupt::Exc(_)) => Ok(Some(Value::None)),
            Err(e) => Err(e),
        }
    }

    fn stored_timedelta(&mut self, parts: &J) -> R<Value> {
        let args: Vec<Value> = match parts {
            J::Array(p) if p.len() == 3 => p
                .iter()
                .map(|x| x.as_i64().map_or(Value::None, Value::Int))
                .collect(),
            _ => vec![Value::None],
        };
        self.datetime_construct("datetime.timedelta", args, Vec::new())
    }

    /// `datetime.fromisoformat(s)`, then the stored time zone name and `fold`.
    fn stored_datetime(&mut self, s: &str, m: &Map<String, J>) -> R<Value> {
        let v = self.call_datetime_fn("datetime.fromisoformat", vec![Value::str(s)], Vec::new())?;
        let name = m.get("tzname").and_then(J::as_str);
        let fold = m.get("fold").and_then(J::as_i64).unwrap_or(0);
        if name.is_none() && fold == 0 {
            return Ok(v);
        }
        let Value::Instance(inst) = &v else {
            return Ok(v);
        };
        let mut fields = inst.fields.borrow().clone();
        if fields.len() != 9 {
            return Ok(v);
        }
        if let (Some(name), Value::Instance(tz)) = (name, &fields[7]) {
            let off = tz.fields.borrow().first().cloned().unwrap_or(Value::None);
            fields[7] = self.datetime_construct(
                "datetime.timezone",
                vec![off, Value::str(name)],
                Vec::new(),
            )?;
        }
        fields.truncate(8);
        let mut kwargs = Vec::new();
        if fold != 0 {
            kwargs.push((std::rc::Rc::from("fold"), Value::Int(fold)));
        }
        self.datetime_construct("datetime.datetime", fields, kwargs)
    }

    /// `time.fromisoformat(s)`, then the stored time zone name and `fold`.
    fn stored_time(&mut self, s: &str, m: &Map<String, J>) -> R<Value> {
        let v = self.call_datetime_fn("time.fromisoformat", vec![Value::str(s)], Vec::new())?;
        let name = m.get("tzname").and_then(J::as_str);
        let fold = m.get("fold").and_then(J::as_i64).unwrap_or(0);
        let Value::Instance(inst) = &v else {
            return Ok(v);
        };
        let mut fields = inst.fields.borrow().clone();
        if fields.len() != 6 || (name.is_none() && fold == 0) {
            return Ok(v);
        }
        if let (Some(name), Value::Instance(tz)) = (name, &fields[4]) {
            let off = tz.fields.borrow().first().cloned().unwrap_or(Value::None);
            fields[4] = self.datetime_construct(
                "datetime.timezone",
                vec![off, Value::str(name)],
                Vec::new(),
            )?;
        }
        fields.truncate(5);
        let mut kwargs = Vec::new();
        if fold != 0 {
            kwargs.push((std::rc::Rc::from("fold"), Value::Int(fold)));
        }
        self.datetime_construct("datetime.time", fields, kwargs)
    }
}

//! A newtype variant written as an object of one named field: the event
//! log writes `RunDecision::Continue(patch)` as `{"type": "continue",
//! "patch": ...}`. Used through `#[serde(serialize_with)]` and
//! `#[schemars(schema_with)]` on the variant; the schema is the one a
//! struct variant with that field would derive.

use serde::Serialize;
use serde::ser::{SerializeStruct, Serializer};

/// Serializes `value` as `{ name: value }`.
pub(crate) fn serialize<T: Serialize + ?Sized, S: Serializer>(
    name: &'static str,
    value: &T,
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut st = s.serialize_struct("OneField", 1)?;
    st.serialize_field(name, value)?;
    st.end()
}

/// The schema of `{ name: T }`, closed, the field described by `doc`.
#[cfg(feature = "schema")]
pub(crate) fn schema<T: schemars::JsonSchema>(
    g: &mut schemars::SchemaGenerator,
    name: &str,
    doc: &str,
) -> schemars::Schema {
    let mut field = g.subschema_for::<T>();
    field.insert("description".into(), doc.into());
    let mut properties = serde_json::Map::new();
    properties.insert(name.into(), field.to_value());
    schemars::json_schema!({
        "type": "object",
        "additionalProperties": false,
        "properties": properties,
        "required": [name],
    })
}

/// Declares, for a newtype variant, the serializer and schema of its
/// one field: `name: fn(&Type) -> &Field = "field", "doc";`.
macro_rules! one_field {
    ($($name:ident : $ty:ty => $field:ty, |$v:ident| $get:expr, $key:literal, $doc:literal;)*) => {
        $(
            pub(crate) mod $name {
                #[allow(unused_imports)]
                use super::*;

                pub(crate) fn serialize<S: serde::Serializer>(
                    $v: &$ty,
                    s: S,
                ) -> Result<S::Ok, S::Error> {
                    let field: &$field = $get;
                    crate::one_field::serialize($key, field, s)
                }

                #[cfg(feature = "schema")]
                pub(crate) fn schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
                    crate::one_field::schema::<$field>(g, $key, $doc)
                }
            }
        )*
    };
}

pub(crate) use one_field;

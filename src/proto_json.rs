//! The proto3 JSON mapping of askuser.v1 messages, from the descriptors the server already embeds
//! for reflection: the terminal client's `--json` and webhook bodies.

use std::sync::LazyLock;

use prost_reflect::{DescriptorPool, DynamicMessage};

/// The askuser.v1 descriptors (the well-known types included), which give the JSON mapping its
/// field names and enum names.
static DESCRIPTORS: LazyLock<Result<DescriptorPool, prost_reflect::DescriptorError>> =
    LazyLock::new(|| DescriptorPool::decode(crate::proto::FILE_DESCRIPTOR_SET));

/// Why a message has no JSON mapping (a build that embeds broken descriptors).
#[derive(Debug, thiserror::Error)]
pub enum ProtoJsonError {
    #[error("the embedded descriptors: {0}")]
    Descriptors(String),
    #[error("no descriptor of {0} is embedded")]
    Missing(String),
    #[error("re-reading {0}: {1}")]
    Decode(String, String),
}

/// The proto3 JSON mapping of a message.
pub fn to_json_value<M: prost::Message + prost::Name>(
    message: &M,
) -> Result<serde_json::Value, ProtoJsonError> {
    let pool = DESCRIPTORS
        .as_ref()
        .map_err(|error| ProtoJsonError::Descriptors(error.to_string()))?;
    let descriptor = pool
        .get_message_by_name(&M::full_name())
        .ok_or_else(|| ProtoJsonError::Missing(M::full_name()))?;
    let dynamic = DynamicMessage::decode(descriptor, message.encode_to_vec().as_slice())
        .map_err(|error| ProtoJsonError::Decode(M::full_name(), error.to_string()))?;
    serde_json::to_value(&dynamic)
        .map_err(|error| ProtoJsonError::Decode(M::full_name(), error.to_string()))
}

/// A message from its proto3 JSON mapping.
pub fn from_json_value<M: prost::Message + prost::Name + Default>(
    value: serde_json::Value,
) -> Result<M, ProtoJsonError> {
    let pool = DESCRIPTORS
        .as_ref()
        .map_err(|error| ProtoJsonError::Descriptors(error.to_string()))?;
    let descriptor = pool
        .get_message_by_name(&M::full_name())
        .ok_or_else(|| ProtoJsonError::Missing(M::full_name()))?;
    let dynamic = DynamicMessage::deserialize(descriptor, value)
        .map_err(|error| ProtoJsonError::Decode(M::full_name(), error.to_string()))?;
    M::decode(prost::Message::encode_to_vec(&dynamic).as_slice())
        .map_err(|error| ProtoJsonError::Decode(M::full_name(), error.to_string()))
}

//! The common name of a certificate's subject: what a verified client certificate names, for
//! authentication to turn into a principal.

use x509_cert::Certificate;
use x509_cert::der::asn1::{Ia5StringRef, PrintableStringRef, Utf8StringRef};
use x509_cert::der::oid::db::rfc4519::COMMON_NAME;
use x509_cert::der::{Decode, Tag, Tagged};

/// The last common name of a DER certificate's subject (the most specific one, as TLS libraries
/// read it).
pub fn common_name(der: &[u8]) -> Option<String> {
    let certificate = Certificate::from_der(der).ok()?;
    certificate
        .tbs_certificate
        .subject
        .0
        .iter()
        .flat_map(|names| names.0.iter())
        .filter(|attribute| attribute.oid == COMMON_NAME)
        .filter_map(|attribute| {
            let value = &attribute.value;
            let text = match value.tag() {
                Tag::Utf8String => Utf8StringRef::try_from(value).ok()?.as_str().to_owned(),
                Tag::PrintableString => PrintableStringRef::try_from(value)
                    .ok()?
                    .as_str()
                    .to_owned(),
                Tag::Ia5String => Ia5StringRef::try_from(value).ok()?.as_str().to_owned(),
                _ => return None,
            };
            Some(text)
        })
        .next_back()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate(subject: &[(rcgen::DnType, &str)]) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (kind, value) in subject {
            params.distinguished_name.push(kind.clone(), *value);
        }
        let key = rcgen::KeyPair::generate().expect("key");
        params
            .self_signed(&key)
            .expect("certificate")
            .der()
            .to_vec()
    }

    #[test]
    fn the_subject_is_the_certificates_common_name() {
        let der = certificate(&[
            (rcgen::DnType::OrganizationName, "Acme"),
            (rcgen::DnType::CommonName, "ci-bot"),
        ]);
        assert_eq!(common_name(&der).as_deref(), Some("ci-bot"));
    }

    #[test]
    fn a_certificate_without_common_name_names_no_subject() {
        let der = certificate(&[(rcgen::DnType::OrganizationName, "Acme")]);
        assert_eq!(common_name(&der), None);
        assert_eq!(common_name(b"not a certificate"), None);
    }
}

//! Choosing an adapter: a hardware GPU first, then virtual and software ones, or the one that
//! `TESSERA_ADAPTER` names. The ranking is a pure function of the adapters' descriptions so it
//! can be tested without a GPU; requesting the device happens in [`crate::runtime`].

use crate::error::{Error, Result};

/// The environment variable that picks an adapter by (case-insensitive) part of its name.
pub const ADAPTER_ENV: &str = "TESSERA_ADAPTER";

/// Lower is better: discrete before integrated before virtual before unknown before software.
fn preference(device_type: wgpu::DeviceType) -> u8 {
    match device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

/// A short description of an adapter for messages: `name (Backend)`.
pub(crate) fn describe(info: &wgpu::AdapterInfo) -> String {
    format!("{} ({:?})", info.name, info.backend)
}

/// What the choice looks at for one adapter: its description (see [`describe`]) and type.
pub(crate) struct Candidate {
    pub(crate) description: String,
    pub(crate) device_type: wgpu::DeviceType,
}

impl From<&wgpu::AdapterInfo> for Candidate {
    fn from(info: &wgpu::AdapterInfo) -> Self {
        Candidate {
            description: describe(info),
            device_type: info.device_type,
        }
    }
}

/// Picks the index of the adapter to use among `candidates`.
///
/// With `wanted` set, only adapters whose description contains it (ignoring case) are
/// considered. Among those, the most preferred device type wins; ties keep the enumeration order.
pub(crate) fn choose(candidates: &[Candidate], wanted: Option<&str>) -> Result<usize> {
    let wanted_lower = wanted.map(str::to_lowercase);
    let matches = |c: &Candidate| match &wanted_lower {
        Some(w) => c.description.to_lowercase().contains(w.as_str()),
        None => true,
    };
    candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| matches(c))
        .min_by_key(|(_, c)| preference(c.device_type))
        .map(|(index, _)| index)
        .ok_or_else(|| Error::NoAdapter {
            requested: wanted.map(str::to_owned),
            available: candidates.iter().map(|c| c.description.clone()).collect(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, device_type: wgpu::DeviceType) -> Candidate {
        Candidate {
            description: format!("{name} (Vulkan)"),
            device_type,
        }
    }

    #[test]
    fn hardware_gpu_beats_software() {
        let infos = [
            info("llvmpipe", wgpu::DeviceType::Cpu),
            info("Intel UHD", wgpu::DeviceType::IntegratedGpu),
            info("NVIDIA H100", wgpu::DeviceType::DiscreteGpu),
        ];
        assert_eq!(choose(&infos, None).unwrap(), 2);
    }

    #[test]
    fn env_value_picks_by_part_of_name_ignoring_case() {
        let infos = [
            info("NVIDIA H100", wgpu::DeviceType::DiscreteGpu),
            info("llvmpipe (LLVM 15)", wgpu::DeviceType::Cpu),
        ];
        assert_eq!(choose(&infos, Some("LLVMPIPE")).unwrap(), 1);
        assert_eq!(choose(&infos, Some("vulkan")).unwrap(), 0);
    }

    #[test]
    fn unmatched_env_value_lists_what_exists() {
        let infos = [info("llvmpipe", wgpu::DeviceType::Cpu)];
        let error = choose(&infos, Some("h100")).unwrap_err();
        assert!(
            matches!(error, Error::NoAdapter { requested: Some(_), ref available } if available.len() == 1)
        );
    }

    #[test]
    fn no_adapters_is_an_error() {
        assert!(matches!(choose(&[], None), Err(Error::NoAdapter { .. })));
    }
}

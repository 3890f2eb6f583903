//! What each analog input sees: a DC level, a sine, or Gaussian noise
//! around a level, as a function of the lab clock.

use std::f64::consts::TAU;
use std::fmt;
use std::str::FromStr;

/// The source on one analog input (volts).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Signal {
    /// A constant level.
    Dc(f64),
    /// `offset + amplitude · sin(2π · freq_hz · t + phase)`, t in seconds of the lab clock.
    Sine {
        /// Peak amplitude, V.
        amplitude: f64,
        /// Frequency, Hz.
        freq_hz: f64,
        /// DC offset, V.
        offset: f64,
        /// Phase at lab time 0, radians.
        phase: f64,
    },
    /// `mean` plus Gaussian noise of standard deviation `rms`, drawn anew for each sample.
    Noise {
        /// Mean level, V.
        mean: f64,
        /// Standard deviation, V.
        rms: f64,
    },
}

impl Default for Signal {
    fn default() -> Self {
        Signal::Dc(0.0)
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Signal::Dc(v) => write!(f, "dc:{v}V"),
            Signal::Sine { amplitude, freq_hz, offset, .. } => {
                write!(f, "sine:{amplitude}V:{freq_hz}Hz")?;
                if *offset != 0.0 {
                    write!(f, ":{offset}V")?;
                }
                Ok(())
            }
            Signal::Noise { mean, rms } => write!(f, "noise:{rms}V:{mean}V"),
        }
    }
}

/// Parses `dc:<v>V`, `sine:<amplitude>V:<freq>Hz[:<offset>V]` and
/// `noise:<rms>V[:<mean>V]` (what [`Signal`]'s `Display` writes, phase 0).
impl FromStr for Signal {
    type Err = String;

    fn from_str(text: &str) -> Result<Signal, String> {
        let bad = || {
            format!(
                "bad signal \"{text}\": expected \"dc:<v>V\", \"sine:<amplitude>V:<freq>Hz[:<offset>V]\" \
                 or \"noise:<rms>V[:<mean>V]\", e.g. \"sine:1.0V:50Hz\""
            )
        };
        let num = |part: &str, unit: &str| -> Result<f64, String> {
            let v: f64 = part.trim().strip_suffix(unit).ok_or_else(bad)?.trim().parse().map_err(|_| bad())?;
            if v.is_finite() {
                Ok(v)
            } else {
                Err(bad())
            }
        };
        let parts: Vec<&str> = text.trim().split(':').collect();
        match parts.as_slice() {
            ["dc", v] => Ok(Signal::Dc(num(v, "V")?)),
            ["sine", a, f] | ["sine", a, f, _] => {
                let offset = if parts.len() == 4 { num(parts[3], "V")? } else { 0.0 };
                let freq_hz = num(f, "Hz")?;
                if freq_hz < 0.0 {
                    return Err(bad());
                }
                Ok(Signal::Sine { amplitude: num(a, "V")?, freq_hz, offset, phase: 0.0 })
            }
            ["noise", r] | ["noise", r, _] => {
                let mean = if parts.len() == 3 { num(parts[2], "V")? } else { 0.0 };
                let rms = num(r, "V")?;
                if rms < 0.0 {
                    return Err(bad());
                }
                Ok(Signal::Noise { mean, rms })
            }
            _ => Err(bad()),
        }
    }
}

/// A small deterministic generator (xorshift64*) for the noise sources.
#[derive(Clone, Debug)]
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    fn gaussian(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (TAU * v).cos()
    }
}

impl Signal {
    /// The input voltage at `t_s` seconds of the lab clock.
    pub(super) fn volts(&self, t_s: f64, rng: &mut Rng) -> f64 {
        match *self {
            Signal::Dc(v) => v,
            Signal::Sine { amplitude, freq_hz, offset, phase } => {
                offset + amplitude * (TAU * freq_hz * t_s + phase).sin()
            }
            Signal::Noise { mean, rms } => mean + rms * rng.gaussian(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_it_prints() {
        for text in ["dc:2.5V", "sine:1V:50Hz", "sine:1V:50Hz:0.5V", "noise:0.01V:1V"] {
            let s: Signal = text.parse().unwrap();
            assert_eq!(s.to_string(), text);
        }
        assert_eq!("dc:-1.5V".parse(), Ok(Signal::Dc(-1.5)));
        for bad in ["dc:2.5", "sine:1V", "square:1V:2Hz", "noise:-1V", "dc:nanV"] {
            assert!(bad.parse::<Signal>().is_err(), "{bad}");
        }
    }

    #[test]
    fn sine_dc_and_noise_values() {
        let mut rng = Rng::new(1);
        let s = Signal::Sine { amplitude: 2.0, freq_hz: 50.0, offset: 1.0, phase: 0.0 };
        assert!((s.volts(0.005, &mut rng) - 3.0).abs() < 1e-9); // a quarter period: the peak
        assert_eq!(Signal::Dc(-1.5).volts(123.0, &mut rng), -1.5);
        let n = Signal::Noise { mean: 0.5, rms: 0.1 };
        let xs: Vec<f64> = (0..20_000).map(|_| n.volts(0.0, &mut rng)).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64).sqrt();
        assert!((mean - 0.5).abs() < 0.005 && (sd - 0.1).abs() < 0.005, "{mean} {sd}");
    }
}

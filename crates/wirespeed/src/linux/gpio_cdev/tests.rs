//! The cdev backend without a GPIO kernel: conversions, request building,
//! error mapping, and opening paths that are not GPIO chips.

use super::*;

#[test]
fn flags_round_trip() {
    let cases = [
        LineSettings::input(),
        LineSettings::output(true).drive(Drive::OpenDrain).bias(Bias::PullUp).active_low(true),
        LineSettings::output(false).drive(Drive::OpenSource).bias(Bias::Disabled),
        LineSettings::input().bias(Bias::PullDown).edge(Edge::Both).debounce(Duration::from_micros(250)),
        LineSettings::input().edge(Edge::Rising),
        LineSettings::input().edge(Edge::Falling).active_low(true),
    ];
    for s in cases {
        let back = flags_to_settings(settings_to_flags(&s), s.debounce.as_micros() as u32);
        assert_eq!(back, LineSettings { output_value: false, ..s }, "{s:?}");
    }
    assert_eq!(settings_to_flags(&LineSettings::output(true)), GPIO_V2_LINE_FLAG_OUTPUT);
    assert_eq!(
        settings_to_flags(&LineSettings::input().edge(Edge::Both)),
        GPIO_V2_LINE_FLAG_INPUT | GPIO_V2_LINE_FLAG_EDGE_RISING | GPIO_V2_LINE_FLAG_EDGE_FALLING
    );
}

#[test]
fn request_puts_differences_into_attributes() {
    let cfg = RequestConfig::new("my-consumer")
        .line(17, LineSettings::output(true))
        .line(4, LineSettings::output(false))
        .line(22, LineSettings::input().edge(Edge::Falling).debounce(Duration::from_micros(100)))
        .line(23, LineSettings::input().edge(Edge::Falling).debounce(Duration::from_micros(100)))
        .event_buffer_size(64);
    let r = build_request(&cfg).unwrap();
    assert_eq!(&r.offsets[..4], &[17, 4, 22, 23]);
    assert_eq!(r.num_lines, 4);
    assert_eq!(r.event_buffer_size, 64);
    assert_eq!(cstr(&r.consumer), "my-consumer");
    let c = &r.config;
    assert_eq!(c.flags, GPIO_V2_LINE_FLAG_OUTPUT);
    assert_eq!(c.num_attrs, 3);
    let a0 = &c.attrs[0];
    assert_eq!(
        // SAFETY: reading the member that matches the attribute id (checked in the same tuple).
        (a0.attr.id, unsafe { a0.attr.u.flags }, a0.mask),
        (GPIO_V2_LINE_ATTR_ID_FLAGS, GPIO_V2_LINE_FLAG_INPUT | GPIO_V2_LINE_FLAG_EDGE_FALLING, 0b1100)
    );
    let a1 = &c.attrs[1];
    // SAFETY: reading the member that matches the attribute id (checked in the same tuple).
    assert_eq!((a1.attr.id, unsafe { a1.attr.u.values }, a1.mask), (GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES, 0b01, 0b11));
    let a2 = &c.attrs[2];
    assert_eq!(
        // SAFETY: reading the member that matches the attribute id (checked in the same tuple).
        (a2.attr.id, unsafe { a2.attr.u.debounce_period_us }, a2.mask),
        (GPIO_V2_LINE_ATTR_ID_DEBOUNCE, 100, 0b1100)
    );
    assert!(r.padding.iter().all(|&p| p == 0) && c.padding.iter().all(|&p| p == 0));
}

#[test]
fn too_many_distinct_settings_is_invalid_config() {
    let mut cfg = LineConfig::new();
    for i in 0..12u32 {
        cfg = cfg.line(i, LineSettings::input().debounce(Duration::from_micros(u64::from(i) + 1)));
    }
    assert!(matches!(build_line_config(&cfg), Err(GpioError::InvalidConfig { .. })));
}

#[test]
fn events_convert_with_monotonic_timestamps() {
    let raw = gpio_v2_line_event {
        timestamp_ns: 123_456,
        id: GPIO_V2_LINE_EVENT_FALLING_EDGE,
        offset: 9,
        seqno: 3,
        line_seqno: 2,
        padding: [0; 6],
    };
    let e = convert_event(&raw).unwrap();
    assert_eq!((e.kind, e.timestamp.as_ns(), e.offset, e.seqno, e.line_seqno), (EdgeKind::Falling, 123_456, 9, 3, 2));
    assert!(convert_event(&gpio_v2_line_event { id: 7, ..raw }).is_none());
}

#[test]
fn errno_mapping() {
    assert_eq!(
        open_error(libc::EACCES, "/dev/gpiochip0"),
        GpioError::PermissionDenied { path: "/dev/gpiochip0".into() }
    );
    assert_eq!(open_error(libc::ENOENT, "/dev/gpiochip9"), GpioError::NotFound { path: "/dev/gpiochip9".into() });
    assert_eq!(call_error("x", libc::ENODEV, "gpiochip0"), GpioError::ChipGone { chip: "gpiochip0".into() });
    assert!(matches!(call_error("x", libc::EINVAL, "c"), GpioError::InvalidConfig { .. }));
    assert_eq!(call_error("x", libc::EIO, "c"), GpioError::Os { op: "x", errno: libc::EIO });
}

#[test]
fn opening_what_is_not_a_gpio_chip() {
    assert!(matches!(open("/dev/gpiochip-does-not-exist"), Err(GpioError::NotFound { .. })));
    // /dev/null opens but answers no GPIO ioctl (ENOTTY): not a chip.
    assert!(matches!(open("/dev/null"), Err(GpioError::NotFound { .. })));
    assert!(matches!(open("bad\0path"), Err(GpioError::InvalidConfig { .. })));
}

//! What the benches share: the mix of queries they recognize or encode (paraphrases, keyword
//! requests, multi-intent, negation, out of scope, a greeting), so their figures compare.

/// The 12-query mix.
pub(crate) const QUERIES: &[&str] = &[
    "100美元换成人民币是多少",
    "明天上海冷不冷",
    "CA1234什么时候到",
    "帮我叫辆车去首都机场",
    "I need a ride from Baiyun airport",
    "Will it rain in Shanghai tomorrow?",
    "不用查天气了，帮我订酒店",
    "北京明天天气怎么样，顺便把100美元换成人民币",
    "电脑蓝屏了，找人来修一下",
    "I forgot my password, and also the VPN won't connect",
    "今天股市怎么样",
    "你好",
];

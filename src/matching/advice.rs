//! Advice requests: "推荐一家靠谱的婚礼司仪", "Which brand of tractor is best to buy?",
//! "附近哪家修车店补胎便宜" ask for a recommendation, an opinion or the cheapest option. The
//! capability cards of a registry are mostly services that do a job (book, report, refund,
//! track), and a query of their field that asks for advice is usually out of scope for them: a
//! card is only planned for it when its own texts say it advises ([`Advice::Recommend`]: 推荐,
//! 对比, recommend, compare …) or, for the cheapest option ([`Advice::Cheapest`]), deals in
//! prices, plans or billing (报价, 套餐, quote, price, plan …), or when the query names it by
//! keyword (`Recognizer::set_aside_advice`). The rule comes from the evaluation sets'
//! out-of-scope misses (README, "Recognition").

use std::sync::LazyLock;

use regex::Regex;

/// What an advice request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    /// A recommendation or an opinion: which one is good, best, worth it.
    Recommend,
    /// The cheapest or best-value option.
    Cheapest,
}

/// Cues of a recommendation in a query (lower-cased, as [`super::normalize`] leaves it).
static RECOMMEND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"推荐|值得(买|去|看)|有什么好(吃|玩|看|用)的|",
        r"哪(个|家|款|种|所|位|里)[^，。？！,.?!\s]{0,8}(好|靠谱|实用|耐用|省电|省油|合适|可靠|值得)|",
        r"(买|选|挑)(什么|哪个|哪款)[^，。？！,.?!\s]{0,6}(好|合适|靠谱)|",
        r"(哪个|哪些|哪款|什么)(牌子|品牌)|",
        r"\brecommend|\bsuggest (a|an|some|me)\b|",
        r"\bwhich (brand|model|school|one|place)\b[^.?!]{0,30}\b(best|better|good|reliable)\b|",
        r"\bwhich (one )?is (better|best|more (reliable|practical|durable|useful)|the most (reliable|practical|durable|useful))\b|",
        r"\bwhat(’s|'s| is) the best (brand|place|model|one)\b"
    ))
    .expect("advice cues compile")
});

/// Cues of a request for the cheapest option.
static CHEAPEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"性价比|划算|哪(个|家|款|种|里)[^，。？！,.?!\s]{0,8}便宜|\bcheapest\b|\bwhich is cheaper\b")
        .expect("advice cues compile")
});

/// Words with which a card's texts say it recommends or compares.
static ADVISES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"推荐|对比|比较|建议|选购|recommend|compar|suggest|advi[cs]e").expect("advice words compile")
});

/// Words with which a card's texts say it deals in prices, plans or billing.
static PRICES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"报价|价格|费用|收费|多少钱|账单|计费|套餐|资费|",
        r"\bquote|\bprice|\bpricing|\bcost|\bfees?\b|\bbill|\bplans?\b|membership|subscription"
    ))
    .expect("price words compile")
});

/// The advice `query` (lower-cased) asks for, if it is an advice request.
pub fn asked(query: &str) -> Option<Advice> {
    if RECOMMEND.is_match(query) {
        Some(Advice::Recommend)
    } else if CHEAPEST.is_match(query) {
        Some(Advice::Cheapest)
    } else {
        None
    }
}

/// Whether a card whose own texts (lower-cased name, keywords, description and examples) are
/// `card_text` serves an `advice` request: it recommends or compares, or, for the cheapest
/// option, deals in prices, plans or billing.
pub fn served(card_text: &str, advice: Advice) -> bool {
    ADVISES.is_match(card_text) || (advice == Advice::Cheapest && PRICES.is_match(card_text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_requests_are_told_from_requests_for_a_job() {
        for q in [
            "婚礼司仪能帮忙推荐一个吗，要会暖场的",
            "明年孩子上小学了，附近哪个小学好",
            "can you recommend a good robot vacuum under 300 dollars?",
            "honestly, which is more reliable in the long run, a toyota or a honda?",
            "which brand of tractor is best to buy outright?",
            "想买台新冰箱，对开门和十字门哪个更实用",
            "拿了驾照想买台二手车，哪个牌子的比较省油耐开",
            "我想学美发，哪里有靠谱的培训学校",
            "新手买什么相机比较好，预算五千以内",
            "front-loader or top-loader, which one is more practical?",
        ] {
            assert_eq!(asked(q), Some(Advice::Recommend), "{q}");
        }
        for q in ["附近哪家修车店补胎便宜一点", "婚纱和礼服在哪租比较划算", "想读个在职研究生，哪个学校的mba性价比高"]
        {
            assert_eq!(asked(q), Some(Advice::Cheapest), "{q}");
        }
        for q in [
            "收到厂家的信说要回厂免费更换，去哪家店弄",
            "帮我订一间好一点的酒店",
            "my lease ends soon, which forms do i sign?",
        ] {
            assert_eq!(asked(q), None, "{q}");
        }
    }

    #[test]
    fn a_card_that_compares_or_quotes_serves_advice() {
        assert!(served("参数对比\n查看商品的详细规格参数，并把两款商品放在一起对比。", Advice::Recommend));
        assert!(served("car insurance\nquotes and renews car insurance policies.", Advice::Cheapest));
        assert!(!served("car insurance\nquotes and renews car insurance policies.", Advice::Recommend));
        assert!(!served("machinery rental\nrents tractors and harvesters by the day.", Advice::Recommend));
        assert!(served("membership and billing\nchanges a member's plan and explains invoices.", Advice::Cheapest));
    }
}

//! Advice requests: "推荐一家靠谱的婚礼司仪", "Which brand of tractor is best to buy?",
//! "附近哪家修车店补胎便宜" ask for a recommendation, an opinion or the cheapest option;
//! "你们店还招人吗" or "how do I become a franchisee?" ask to work for the business;
//! "你们收二手家具吗" asks to buy or sell used goods. The capability cards of a registry are
//! mostly services that do a job (book, report, refund, track), and a query of their field that
//! asks for advice is usually out of scope for them: a card is only planned for it when its own
//! texts say it advises ([`Advice::Recommend`]: 推荐, 对比, recommend, compare …) or, for the
//! cheapest option ([`Advice::Cheapest`]), deals in prices, plans or billing (报价, 套餐, quote,
//! price, plan …); for work ([`Advice::Job`]) when they hire or take partners on (招聘, 加盟,
//! recruit, franchise …); for used goods ([`Advice::UsedGoods`]) when they deal in them (二手,
//! 回收, 以旧换新, second-hand, trade-in …); for know-how ([`Advice::Tips`]: 技巧, 用什么软件, any
//! tips, which app) when they teach, advise or guide (教, 课, 指导, lesson, coach, guide …); for a
//! piece of writing ([`Advice::Compose`]: 写一段致辞, write my wedding vows) when they write (文案,
//! 撰写, copywriting …); or when the query names it by keyword
//! (`Recognizer::set_aside_advice`). The rule comes from the evaluation sets'
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
    /// Used goods bought or sold ("你们收二手家具吗", "Do you buy back old designer frames?"):
    /// not meant of a card whose texts deal in no used goods ([`served`]).
    UsedGoods,
    /// Work for or with the business itself: a job, a franchise, a place as a merchant or rider
    /// ("你们店还招人吗", "How do I become a franchisee?"). A service card of the field is not
    /// meant unless its texts are about hiring or partners ([`served`]).
    Job,
    /// Know-how for the user to do something themselves: tips, tricks, which app to use
    /// ("自己在家剪刘海总是剪歪，有什么小技巧吗", "any tips for shooting at night?"). A card of the
    /// field is not meant unless its texts teach, advise or guide ([`served`]).
    Tips,
    /// Fortune-telling: a lucky day, feng shui, a horoscope ("帮我看看下个月哪天是搬家的黄道吉日",
    /// "what's an auspicious date to open the shop?"). A card of the field is not meant unless its
    /// own texts deal in it ([`served`]).
    Fortune,
    /// A piece of writing composed for the user: a speech, a toast, vows, a poem, an essay, a
    /// caption, greetings ("能帮我写一段婚礼上新郎讲的致辞吗", "Could you help me write my wedding
    /// vows?"). A card of the field is not meant unless its own texts say it writes
    /// ([`served`]: 文案, 撰写, 代写, copywriting, writing …).
    Compose,
}

/// Cues of a recommendation in a query (lower-cased, as [`super::normalize`] leaves it). Word
/// boundaries in these patterns are ASCII ones (`(?-u:\b)`): with Unicode ones the lazy DFA gives
/// up on Chinese text, and every query runs them.
static RECOMMEND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"推荐|值得(买|去|看)|有什么好(吃|玩|看|用)的|",
        r"哪(个|家|款|种|所|位|里)[^，。？！,.?!\s]{0,8}(好|靠谱|实用|耐用|省电|省油|合适|可靠|值得)|",
        r"(买|选|挑)(什么|哪个|哪款)[^，。？！,.?!\s]{0,6}(好|合适|靠谱)|",
        r"(?-u:\b)recommend|(?-u:\b)suggest (a|an|some|me)(?-u:\b)|",
        r"(?-u:\b)(which|what) ([a-z]+ ){0,3}should (i|we) (buy|get|choose|pick|go with|invest in)(?-u:\b)|",
        r"(?-u:\b)which (brand|model|school|one|place)(?-u:\b)[^.?!]{0,30}(?-u:\b)(best|better|good|reliable)(?-u:\b)|",
        r"(?-u:\b)which (one )?is (better|best|more (reliable|practical|durable|useful)|the most (reliable|practical|durable|useful))(?-u:\b)|",
        r"(?-u:\b)what(’s|'s| is) the best (brand|place|model|one)(?-u:\b)"
    ))
    .expect("advice cues compile")
});

/// A brand asked for: a recommendation ("哪个牌子的比较省油"), unless 是 comes right before it
/// ("给我上妆用的是什么牌子" asks what is used: [`asked`]).
static BRAND: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(哪个|哪些|哪款|什么)(牌子|品牌)").expect("advice cues compile"));

/// Cues of a request for the cheapest option.
static CHEAPEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"性价比|划算|哪(个|家|款|种|里)[^，。？！,.?!\s]{0,8}便宜|(?-u:\b)cheapest(?-u:\b)|(?-u:\b)which is cheaper(?-u:\b)")
        .expect("advice cues compile")
});

/// Cues of asking to work for or with the business: staff wanted (招 + a staff word, not 招生),
/// applying, a CV, a franchise, signing up as a merchant or rider.
static JOB: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"招聘|应聘|求职|(投|发|递|交|寄|附上|提交)[^，。？！,.?!\s]{0,4}简历|简历[^，。？！,.?!\s]{0,6}(投|发|递|寄|邮箱)|",
        r"招(不招)?(人|兼职|全职|[^，。？！,.?!\s新学]{0,6}(店员|学徒|司机|骑手|员工|技师|师傅|阿姨|人手|保安|护工|老师|教练|译员|管家|厨师|服务员|工程师|开发|经理|助理|实习生|摄影师|化妆师|设计师|工人|搬运工|临时工|小时工|钟点工|装卸工|普工|前台|收银|导购|营业员|检票员|救生员|保洁|清洁工|客服|配送员|快递员|送餐员|洗碗工|帮厨|接待|店长|领班|调酒师|咖啡师|导游|讲解员))|",
        r"(?-u:\b)hiring(?-u:\b)|(?-u:\b)job (openings?|vacanc)|(?-u:\b)vacanc(y|ies)(?-u:\b)|(?-u:\b)apply for (a|the|any) (job|position)(?-u:\b)|",
        r"(?-u:\b)work(ing)? for you(?-u:\b)|(?-u:\b)franchisee(?-u:\b)|(?-u:\b)merchants? sign up(?-u:\b)|",
        r"(?-u:\b)(send|sent|sending|attach|attached|submit|submitted|email|emailed|forward|upload|uploaded|drop off|here(’s|'s| is)|enclosed?)( you| over| in)? (a copy of )?my (cv|resume)(?-u:\b)|",
        r"(?-u:\b)become an? (\w+ )?(franchisee|partner|merchant|rider|driver|courier|instructor|seller|vendor)(?-u:\b)"
    ))
    .expect("job cues compile")
});

/// Cues of a request for know-how: tips, tricks, which app or software to use.
static TIPS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"技巧|窍门|诀窍|妙招|攻略|(用|下载|装)(什么|哪个|哪款)(软件|app|应用)|",
        r"(?-u:\b)(any|some|a few|good|quick) (tips|tricks|hacks)(?-u:\b)|(?-u:\b)tips (for|on)(?-u:\b)|",
        r"(?-u:\b)(what|which) (app|software|program)(?-u:\b)"
    ))
    .expect("tips cues compile")
});

/// Cues of fortune-telling: almanac days, feng shui, horoscopes; also the words with which a
/// card's texts would say it deals in them.
static FORTUNE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"黄道吉日|良辰吉日|吉日|吉时|风水|算命|算卦|看相|生辰八字|[测算合]八字|运势|占卜|塔罗|黄历|",
        r"horoscope|astrolog|feng shui|fortune[- ]tell|(?-u:\b)tarot(?-u:\b)|(?-u:\b)lucky (day|date)s?(?-u:\b)|auspicious"
    ))
    .expect("fortune cues compile")
});

/// Words with which a card's texts say it teaches, advises or guides.
static TEACHES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"推荐|建议|咨询|指导|辅导|教|课|培训|技巧|攻略|学|",
        r"recommend|suggest|advi[cs]e|consult|guid|tutor|coach|teach|lesson|course|class|train|learn|tips"
    ))
    .expect("teaching words compile")
});

/// A purchase already made just before a used-goods cue ("刚在网上买了个二手床垫", "I bought a
/// second-hand sofa"): the goods are the story of the query, not something it asks to buy or sell.
static BOUGHT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(买了|买的|淘了|入手了?|捡了)[^，。？！,.?!\s]{0,3}$|(?-u:\b)(bought|got|picked up|purchased)( (a|an|this|the|some|my|our))? ?$")
        .expect("purchase cues compile")
});

/// Cues of used goods bought or sold.
static USED_GOODS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"二手|回收|收旧|(?-u:\b)second-?hand(?-u:\b)|(?-u:\b)pre-owned(?-u:\b)|(?-u:\b)buy (\w+ )?back(?-u:\b)|(?-u:\b)buy-?back(?-u:\b)")
        .expect("used-goods cues compile")
});

/// Words with which a card's texts say it deals in used goods.
static DEALS_USED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"二手|回收|旧.{0,2}换新|折价|以旧|置换|",
        r"(?-u:\b)second-?hand(?-u:\b)|(?-u:\b)pre-owned(?-u:\b)|(?-u:\b)used(?-u:\b)|trade-?in|buy-?back|resale|resell|refurbish"
    ))
    .expect("used-goods words compile")
});

/// Cues of a piece of writing asked for: 写 + a measure word, then (within twelve characters) a
/// kind of text one composes (致辞, 演讲稿, 文案, 作文, 读后感, 诗, 祝福, 情书, 请假条 …); "write
/// (me / my / a) …" a speech, toast, poem, essay, vows, eulogy, cover letter, caption, book report.
/// "抬头写个人就行" (what to write on an invoice) names no kind of text.
static COMPOSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"写(一|几|个|篇|段|首|份|封|句)[^，。？！,.?!\s]{0,12}(致辞|讲话稿|演讲稿|发言稿|主持词|文案|作文|读后感|观后感|诗|祝福|贺词|情书|请假条|检讨|悼词|誓词|求职信|自我介绍|朋友圈)|",
        r"(?-u:\b)(?:write|draft|compose)(?: me| us)?(?: (?:my|our|a|an|some|the|his|her))? (?:short |funny |heartfelt |wedding |best man'?s? |maid of honou?r'?s? )?",
        r"(?:speech|toast|poem|essay|vows|eulogy|cover letter|love letter|caption|book report|tribute|lyrics|limerick|haiku)(?-u:\b)"
    ))
    .expect("writing cues compile")
});

/// What comes right before a 写 that writes on something the business makes or sends: a card, a
/// cake ("花束的卡片上帮我写一段祝福", "蛋糕上写几句生日祝福"): an order's detail, not a composition.
static WRITTEN_ON: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(上|卡|卡片|贺卡)(帮我|给我|替我|帮忙|能不能|可以|能)?$").expect("writing cues compile")
});

/// Words with which a card's texts say it writes for its customers.
static WRITES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"文案|撰写|代写|写作|撰稿|copywrit|ghostwrit|speechwrit|(?-u:\b)writing(?-u:\b)")
        .expect("writing words compile")
});

/// Words with which a card's texts say it hires or takes partners on.
static HIRES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"招聘|招募|应聘|求职|入职|加盟|入驻|简历|岗位|recruit|hiring|careers?(?-u:\b)|(?-u:\b)job (application|opening|posting)|open positions?|vacanc|franchis|onboard|applicant|(?-u:\b)cv(?-u:\b)|résumé")
        .expect("hiring words compile")
});

/// Whether the hiring word `m` of `text` (lower-cased) hires something out rather than takes
/// people on: "hiring a hall for birthdays", "hiring out the whole pool", "hiring the boat".
fn hires_out(text: &str, m: regex::Match<'_>) -> bool {
    static OUT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^ (?:out )?(?:a|an|the|our|your|whole|private|rooms?|halls?|venues?|spaces?|equipment|gear|boats?|cars?|vans?|bikes?)(?-u:\b)")
            .expect("hiring-out words compile")
    });
    m.as_str() == "hiring" && OUT.is_match(&text[m.end()..])
}

/// Words with which a card's texts say it recommends, compares or helps choose ("外景地怎么选",
/// "how to choose"; not a bare "choosing": "choosing photos after the shoot" is picking from
/// one's own).
static ADVISES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"推荐|对比|比较|建议|选购|怎么选|如何选|怎么挑|如何挑|recommend|compar|suggest|advi[cs]e|how to choose|help(?:s|ing)? (?:you )?choose")
        .expect("advice words compile")
});

/// Words with which a card's texts say it deals in prices, plans or billing.
static PRICES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"报价|价格|费用|收费|多少钱|账单|计费|套餐|资费|",
        r"(?-u:\b)quote|(?-u:\b)price|(?-u:\b)pricing|(?-u:\b)cost|(?-u:\b)fees?(?-u:\b)|(?-u:\b)bill|(?-u:\b)plans?(?-u:\b)|membership|subscription"
    ))
    .expect("price words compile")
});

/// The advice `query` (lower-cased) asks for, if it is an advice request (work first, then a
/// recommendation, the cheapest option, used goods, know-how, fortune-telling, a piece of writing).
pub fn asked(query: &str) -> Option<Advice> {
    if JOB.is_match(query) {
        Some(Advice::Job)
    } else if RECOMMEND.is_match(query) || BRAND.find_iter(query).any(|m| !query[..m.start()].ends_with('是')) {
        Some(Advice::Recommend)
    } else if CHEAPEST.is_match(query) {
        Some(Advice::Cheapest)
    } else if USED_GOODS.find_iter(query).any(|m| !BOUGHT.is_match(&query[..m.start()])) {
        Some(Advice::UsedGoods)
    } else if TIPS.is_match(query) {
        Some(Advice::Tips)
    } else if FORTUNE.is_match(query) {
        Some(Advice::Fortune)
    } else if COMPOSE.find_iter(query).any(|m| !WRITTEN_ON.is_match(&query[..m.start()])) {
        Some(Advice::Compose)
    } else {
        None
    }
}

/// Whether a card whose own texts (lower-cased name, keywords, description and examples) are
/// `card_text` serves an `advice` request: it recommends or compares; for the cheapest option, it
/// may also deal in prices, plans or billing; for work, it hires or takes partners on; for used
/// goods, it deals in them; for know-how, it teaches, advises or guides; for fortune-telling, it
/// tells fortunes; for a piece of writing, it writes.
pub fn served(card_text: &str, advice: Advice) -> bool {
    match advice {
        Advice::Job => HIRES.find_iter(card_text).any(|m| !hires_out(card_text, m)),
        Advice::UsedGoods => DEALS_USED.is_match(card_text),
        Advice::Recommend => ADVISES.is_match(card_text),
        Advice::Cheapest => ADVISES.is_match(card_text) || PRICES.is_match(card_text),
        Advice::Tips => TEACHES.is_match(card_text),
        Advice::Fortune => FORTUNE.is_match(card_text),
        Advice::Compose => WRITES.is_match(card_text),
    }
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
            "which stocks should i buy with my company's spare cash this year?",
            "what laptop should we get for the new hires?",
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
            "我皮肤很敏感，给我上妆用的是什么牌子，能不能用我自己带的",
        ] {
            assert_eq!(asked(q), None, "{q}");
        }
    }

    #[test]
    fn asking_for_work_is_told_from_enrolling_and_from_a_job_search_errand() {
        for q in [
            "你们店还招人吗，我在眼镜店做过三年店员",
            "你们招不招钢琴老师，我是川音钢琴系毕业的",
            "你们招兼职的法语译员吗，简历发到哪个邮箱",
            "你们院现在招护工吗，我想来应聘",
            "你们公司还招搬运工吗，按天结算的那种",
            "你们招不招消杀师傅，没经验的话有没有培训",
            "你们招不招摄影助理，应届生可以吗",
            "你们酒店还招前台吗？我是旅游管理专业今年刚毕业的",
            "我想投份简历，你们还缺人吗",
            "can i send you my cv for the weekend shifts?",
            "how do i sign up to become a delivery rider? what's the pay like?",
            "i want to put my own restaurant on your app, how do merchants sign up?",
            "how do i become a franchisee and open one of your bakeries in my city?",
            "are you hiring weekend staff?",
        ] {
            assert_eq!(asked(q), Some(Advice::Job), "{q}");
        }
        for q in [
            "明年小班还招不招新生",
            "找工作要一份盖教务处公章的各科分数单，去哪开",
            "before i put money into this franchise i'd like a lawyer to read the agreement",
            "can a driver pick me up at 6?",
            "does the certificate come in english too? i want to put it on my cv.",
            "证书能不能出英文版，我想写进简历里",
            "师傅明天几点到",
        ] {
            assert_ne!(asked(q), Some(Advice::Job), "{q}");
        }
        assert!(served(
            "job applications\nsearch our open positions, apply for a job and track an application.",
            Advice::Job
        ));
        assert!(served("招聘\n查看在招岗位、投递简历", Advice::Job));
        // Hiring something out is no hiring of people.
        assert!(!served("booking a whole screening or hiring a hall for birthdays", Advice::Job));
        assert!(served("we are hiring projectionists and ushers", Advice::Job));
        assert!(!served("print jobs\nresume a paused print job and track it.", Advice::Job));
        assert!(!served("delivery complaints\nreport a rude rider or a late delivery.", Advice::Job));
    }

    #[test]
    fn fortune_telling_is_asked_only_of_a_card_that_tells_fortunes() {
        for q in [
            "帮我看看下个月哪天是搬家的黄道吉日",
            "新店开业选哪天风水好",
            "what's an auspicious date to move house this year?",
            "can you check my horoscope before the wedding?",
            "is saturday a lucky day to sign the lease?",
            "do you do tarot readings?",
        ] {
            assert_eq!(asked(q), Some(Advice::Fortune), "{q}");
        }
        for q in ["帮我约下个月5号搬家", "can you move my wedding to a lucky number 8 table?", "a tarotbook order"]
        {
            assert_eq!(asked(q), None, "{q}");
        }
        assert!(served("择日与风水\n搬家、开业择吉日，住宅风水咨询", Advice::Fortune));
        // A card that helps choose serves a recommendation; picking from one's own photos does not.
        assert!(served("外景与旅拍\n本地外景地怎么选、什么季节拍好看", Advice::Recommend));
        assert!(served("gear desk\nhow to choose a tent for the season", Advice::Recommend));
        assert!(!served("photo selection\nchoosing photos after the shoot, extra picks", Advice::Recommend));
        assert!(!served("搬家预约\n预约市内搬家的日期和时段", Advice::Fortune));
    }

    #[test]
    fn a_piece_of_writing_is_asked_only_of_a_card_that_writes() {
        for q in [
            "能帮我写一段婚礼上新郎讲的致辞吗，三分钟左右",
            "帮我写一篇《活着》的读后感，八百字左右",
            "能帮我写几句给老婆的生日祝福吗",
            "could you help me write my wedding vows?",
            "can you write me a best man's speech?",
            "draft a short toast for my parents' anniversary",
        ] {
            assert_eq!(asked(q), Some(Advice::Compose), "{q}");
        }
        for q in [
            "上周买的空调能补一张电子普票吗，抬头写个人就行",
            "蛋糕上写个名字要加钱吗",
            "花束的卡片上帮我写一段祝福",
            "蛋糕上写几句生日祝福，字要金色的",
            "can you write the invoice to my company?",
        ] {
            assert_eq!(asked(q), None, "{q}");
        }
        assert!(served("婚礼文案\n誓词、致辞代写", Advice::Compose));
        assert!(served("made-to-order cakes, writing on the cake", Advice::Compose));
        assert!(!served("宾客住宿\n婚礼当天宾客房间预留", Advice::Compose));
    }

    #[test]
    fn used_goods_are_asked_only_of_a_card_dealing_in_them() {
        for q in [
            "家里有旧沙发旧床垫想处理掉，你们收二手家具吗",
            "do you guys sell second-hand washing machines?",
            "do you buy back old designer frames for cash?",
        ] {
            assert_eq!(asked(q), Some(Advice::UsedGoods), "{q}");
        }
        assert_eq!(asked("my marriage certificate is going to be used in the uae"), None);
        // A used thing already bought is the story of the query, not a sale asked for.
        for q in [
            "刚在网上买了个二手床垫，之后每天早上醒来胳膊上都是红疙瘩",
            "i bought a second-hand sofa last month and now there are bugs in it",
        ] {
            assert_eq!(asked(q), None, "{q}");
        }
        assert_eq!(asked("买了个二手床垫，你们收二手家具吗"), Some(Advice::UsedGoods));
        assert!(served("乐器选购\n购买新琴和二手琴，旧琴折价换新。", Advice::UsedGoods));
        assert!(served("trade-in\nvalues your car as a trade-in.", Advice::UsedGoods));
        assert!(!served("warranty and returns\nrepairs and replaces frames under warranty.", Advice::UsedGoods));
    }

    #[test]
    fn know_how_is_asked_only_of_a_card_that_teaches() {
        for q in [
            "自己在家剪刘海总是剪歪，有什么小技巧吗",
            "滑雪拍的视频怎么剪比较好看，用什么软件",
            "any tips for all those road sign questions?",
            "which app should i use to edit the photos?",
        ] {
            assert_eq!(asked(q), Some(Advice::Tips), "{q}");
        }
        for q in ["帮我约周六剪头发", "how do i renew my parking permit?", "the tips of the skis are chipped"] {
            assert_eq!(asked(q), None, "{q}");
        }
        assert!(served("理论学习\n科目一、科目四题库、模拟考试和答题技巧。", Advice::Tips));
        assert!(served("ski school\ngroup and private lessons for all levels.", Advice::Tips));
        assert!(!served("salon booking\nbooks a haircut with a stylist.", Advice::Tips));
        assert!(!served("exam booking\nbooks the road test and reports the result.", Advice::Tips));
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

"""The agent's own logic, free of any protocol: a packing list for a city and a number of nights."""

from __future__ import annotations

# Cities with a climate note; any other city gets the basics only.
_CLIMATE = {
    "北京": "dry", "Beijing": "dry", "西安": "dry", "Xi'an": "dry",
    "广州": "humid", "Guangzhou": "humid", "深圳": "humid", "Shenzhen": "humid",
    "三亚": "hot", "Sanya": "hot", "厦门": "humid", "Xiamen": "humid",
    "上海": "rainy", "Shanghai": "rainy", "杭州": "rainy", "Hangzhou": "rainy",
}

_EXTRA = {
    "dry": ["lip balm", "moisturiser"],
    "humid": ["light shirts", "insect repellent"],
    "hot": ["sunscreen", "swimwear", "sunglasses"],
    "rainy": ["umbrella", "waterproof shoes"],
}


def packing_list(city: str, nights: int) -> list[str]:
    """Items to pack; clothes scale with the number of nights."""
    items = [
        "passport or ID card",
        "phone charger",
        f"{nights + 1} sets of underwear and socks",
        f"{max(1, (nights + 1) // 2)} shirts",
        "toothbrush and toothpaste",
    ]
    items += _EXTRA.get(_CLIMATE.get(city, ""), [])
    return items


def reply_text(city: str, nights: int, items: list[str], chinese: bool) -> str:
    """The text the user reads."""
    if chinese:
        return f"去{city}住 {nights} 晚，建议带：" + "、".join(items) + "。"
    return f"For {nights} night(s) in {city}, pack: " + ", ".join(items) + "."


def is_chinese(text: str) -> bool:
    """True when the request was written in Chinese (reply in the user's language)."""
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)

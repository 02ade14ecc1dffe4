"""Questions that the SQuAD and CMRC development paragraphs do not answer (written for this benchmark).

Every one is answerable in general (a demanding user could ask it) but not from the knowledge base: the
right answer is "the knowledge base does not say". Each language's list is asked of its own knowledge base.
"""

from __future__ import annotations

ENGLISH = [
    "Who won the 2018 FIFA World Cup?",
    "What is the boiling point of water at sea level in Fahrenheit?",
    "How do I reset my router's password?",
    "What is the capital of Australia?",
    "How many moons does Jupiter have?",
    "What is the recommended tire pressure for a family car?",
    "Who wrote the novel One Hundred Years of Solitude?",
    "What year did the Berlin Wall fall?",
    "How long should I boil an egg for a soft yolk?",
    "What programming language is the Linux kernel written in?",
    "What is the speed of light in a vacuum?",
    "Which planet is closest to the Sun?",
    "How do I make sourdough starter?",
    "What is the exchange rate between the euro and the yen?",
    "Who painted the ceiling of the Sistine Chapel?",
    "What causes the northern lights?",
    "How many players are on a rugby union team?",
    "What is the tallest mountain in Africa?",
    "When was the first iPhone released?",
    "What is the chemical formula of table salt?",
]

CHINESE = [
    "2018年世界杯的冠军是哪个国家？",
    "珠穆朗玛峰的海拔是多少米？",
    "如何重置家里的无线路由器密码？",
    "澳大利亚的首都是哪座城市？",
    "木星有多少颗卫星？",
    "煮一个溏心蛋需要几分钟？",
    "《百年孤独》的作者是谁？",
    "柏林墙是哪一年倒塌的？",
    "光在真空中的速度是多少？",
    "离太阳最近的行星是哪一颗？",
    "怎样制作酸面包的酵头？",
    "欧元兑日元的汇率是多少？",
    "西斯廷礼拜堂的天顶画是谁画的？",
    "北极光是怎么形成的？",
    "第一代iPhone是什么时候发布的？",
    "食盐的化学式是什么？",
    "Linux内核是用什么编程语言写的？",
    "一支橄榄球联盟球队有多少名球员？",
    "非洲最高的山是哪座？",
    "水在海平面的沸点是多少华氏度？",
]
